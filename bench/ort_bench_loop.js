#!/usr/bin/env node
// ONNX Runtime side of model_bench: one model, inputs read from a file,
// timed in rounds that model_bench asks for over stdin, so that the two
// engines can take turns on the same machine.
//
// usage: node ort_bench_loop.js --probe
//          prints "ORT <version>" when onnxruntime-node loads, else fails.
//        node ort_bench_loop.js MODEL.onnx INPUTS.json [--threads N] [--profile PREFIX]
//                               [--no-spin] [--save-optimized PATH] [--no-optimize]
//          INPUTS.json: {"bin": "PATH", "inputs": [{"name", "type", "shape",
//          "offset", "nbytes"}], "expected": [same, for outputs], "atol", "rtol"}
//          with raw little-endian data in PATH (written by model_bench from
//          the model folder's test_data_set_0).
//          --no-spin: intra-op threads do not spin-wait (session config
//            session.intra_op.allow_spinning = 0; the default spins);
//          --save-optimized PATH: ORT writes the model it optimised to PATH
//            (optimizedModelFilePath);
//          --no-optimize: graph optimisation 'disabled' (for a model that ORT
//            optimised and saved itself).
//
// Protocol (one line each way): after the session is created and has run
// once, prints "READY <create_ms> <check> <detail>": check is "ok" when every
// expected output matched (|got - exp| <= atol + rtol * |exp|, integers
// exact; detail the largest abs error), "FAIL" (detail says what differs)
// or "-" (nothing to compare). Then for each stdin line
//   "run W N"  W untimed runs, N timed runs ->
//              "OK <median_ms> <min_ms> <wall_ms> <own_cpu_ms> <machine_busy_ms>"
//              (the last three over the timed runs; busy from /proc/stat, -1 if unknown)
//   "quit"     exits; with --profile (ORT's enableProfiling, the file at
//              PREFIX_<date>.json) it first prints "PROF <op_type> <ms per run>"
//              per operator type (kernel time over all runs / model runs)
//              and "BYE -1".
// Errors print "ERR <message>" and exit 1.
//
// Session options are those of ../shared/bench/ort/bench.js (intra-op
// threads N, inter-op 1, sequential, graph optimisation 'all', CPU EP), and
// timing likewise wraps one awaited session.run() with process.hrtime, so it
// includes the Node binding's own cost per run (about 0.02 ms).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

function fail(msg) {
  process.stdout.write('ERR ' + String(msg).replace(/\s+/g, ' ') + '\n');
  process.exit(1);
}

function loadOrt() {
  const dir = process.env.ORT_NODE_MODULES ||
    path.join(process.env.HOME || '.', '.cache', 'poprt-ort', 'node_modules');
  const p = path.join(dir, 'onnxruntime-node');
  return require(fs.existsSync(p) ? p : 'onnxruntime-node');
}

const TYPED = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

const clkTck = 100; // USER_HZ; Linux reports /proc/stat in these units
function machineBusyMs() {
  try {
    const v = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return (v.reduce((a, b) => a + b, 0) - v[3] - (v[4] || 0)) * 1000 / clkTck;
  } catch (e) { return -1; }
}

function median(a) {
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// The dims of a trace event's type-shape entry ({float: [A, B, C]}), or null.
function dimsOf(entry) {
  if (!entry) return null;
  const dims = Object.values(entry)[0];
  return Array.isArray(dims) ? dims : null;
}

// model_bench's key of a product: the output's dims without leading 1s,
// then for a convolution the element count of its weights (input 1), as in
// '256x14x14/w589824', for a matrix product 'mm' (ONNX Runtime leaves the
// weights it packed out of the event's input shapes); null when the event
// has no shapes.
function productKey(op, args) {
  const out = dimsOf((args.output_type_shape || [])[0]);
  if (!out) return null;
  let i = 0;
  while (i + 1 < out.length && out[i] === 1) i++;
  if (!/Conv/.test(op)) return `${out.slice(i).join('x')}/mm`;
  const w = dimsOf((args.input_type_shape || [])[1]);
  return w ? `${out.slice(i).join('x')}/w${w.reduce((a, b) => a * b, 1)}` : null;
}

// Kernel time per operator type from ORT's profile (a JSON array of trace
// events: one "model_run" per run, and per node "<name>_kernel_time" with
// args.op_name and dur in microseconds), and of the Conv / MatMul / Gemm
// nodes per shape ("PROFS <productKey> <ms per call summed over the nodes>
// <nodes>", as model_bench's libpoprt child reports them); the file is
// removed afterwards.
function printProfile(session, prefix) {
  session.endProfiling();
  const dir = path.dirname(prefix), base = path.basename(prefix);
  const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'));
  const byOp = new Map(), byNode = new Map();
  let runs = 0;
  for (const f of files) {
    const p = path.join(dir, f);
    let events = [];
    try { events = JSON.parse(fs.readFileSync(p, 'utf8')); } catch (e) { /* partial file */ }
    fs.unlinkSync(p);
    for (const ev of events) {
      if (ev.name === 'model_run') runs++;
      else if (ev.cat === 'Node' && String(ev.name).endsWith('_kernel_time') && ev.args) {
        const op = ev.args.op_name || '?';
        byOp.set(op, (byOp.get(op) || 0) + ev.dur);
        const key = /Conv|MatMul|Gemm/.test(op) ? productKey(op, ev.args) : null;
        if (key) {
          const n = byNode.get(ev.name) || { key, us: 0, calls: 0 };
          n.us += ev.dur;
          n.calls++;
          byNode.set(ev.name, n);
        }
      }
    }
  }
  for (const [op, us] of byOp)
    process.stdout.write(`PROF ${op} ${(us / 1000 / Math.max(runs, 1)).toFixed(6)}\n`);
  const byShape = new Map();
  for (const n of byNode.values()) {
    const k = byShape.get(n.key) || { ms: 0, nodes: 0 };
    k.ms += n.us / 1000 / n.calls;
    k.nodes++;
    byShape.set(n.key, k);
  }
  for (const [key, k] of byShape)
    process.stdout.write(`PROFS ${key} ${k.ms.toFixed(6)} ${k.nodes}\n`);
  process.stdout.write('BYE -1\n');
}

// The first run's outputs against the reference outputs in INPUTS.json,
// with model_bench's rule. Returns [check, detail].
function compareExpected(index, bin, outs) {
  const exp = index.expected || [];
  const atol = index.atol === undefined ? 1e-5 : index.atol;
  const rtol = index.rtol === undefined ? 1e-3 : index.rtol;
  let worst = 0, compared = 0;
  for (const t of exp) {
    const Ctor = TYPED[t.type];
    if (!Ctor || t.type === 'float16') continue;
    const got = outs[t.name];
    if (!got) return ['FAIL', `output '${t.name}' missing`];
    if (got.type !== t.type) return ['FAIL', `output '${t.name}' type ${got.type}, expected ${t.type}`];
    if (got.dims.length !== t.shape.length || got.dims.some((d, i) => d !== t.shape[i]))
      return ['FAIL', `output '${t.name}' shape [${got.dims}], expected [${t.shape}]`];
    const ab = new ArrayBuffer(t.nbytes);
    new Uint8Array(ab).set(bin.subarray(t.offset, t.offset + t.nbytes));
    const e = new Ctor(ab), g = got.data;
    if (e.length !== g.length) return ['FAIL', `output '${t.name}' has ${g.length} elements, expected ${e.length}`];
    const isFloat = t.type === 'float32' || t.type === 'float64';
    for (let i = 0; i < e.length; i++) {
      if (!isFloat) {
        if (g[i] !== e[i]) return ['FAIL', `output '${t.name}' element [${i}] got ${g[i]} expected ${e[i]}`];
        continue;
      }
      if (Number.isNaN(e[i]) && Number.isNaN(g[i])) continue;
      if (!Number.isFinite(e[i]) && g[i] === e[i]) continue;
      const err = Math.abs(g[i] - e[i]);
      if (!(err <= atol + rtol * Math.abs(e[i])))
        return ['FAIL', `output '${t.name}' element [${i}] got ${g[i]} expected ${e[i]} (abs err ${err.toPrecision(3)})`];
      if (err > worst) worst = err;
    }
    compared++;
  }
  return compared ? ['ok', `max abs err ${worst.toPrecision(3)}`] : ['-', '-'];
}

async function main() {
  const argv = process.argv.slice(2);
  let ort;
  try { ort = loadOrt(); } catch (e) { fail('cannot load onnxruntime-node: ' + e.message); }
  if (argv[0] === '--probe') {
    const v = ort.env && ort.env.versions ? ort.env.versions.common : '?';
    process.stdout.write('ORT ' + (v || '?') + '\n');
    return;
  }
  let threads = 1, profile = null, spin = true, saveOptimized = null, optimize = true;
  const pos = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--threads') threads = parseInt(argv[++i], 10);
    else if (argv[i] === '--profile') profile = argv[++i];
    else if (argv[i] === '--no-spin') spin = false;
    else if (argv[i] === '--save-optimized') saveOptimized = argv[++i];
    else if (argv[i] === '--no-optimize') optimize = false;
    else pos.push(argv[i]);
  }
  if (pos.length !== 2 || !(threads >= 1)) fail('usage: ort_bench_loop.js MODEL.onnx INPUTS.json [--threads N]');
  const [modelPath, indexPath] = pos;

  const index = JSON.parse(fs.readFileSync(indexPath, 'utf8'));
  const bin = fs.readFileSync(index.bin);
  const feeds = {};
  for (const t of index.inputs) {
    const Ctor = TYPED[t.type];
    if (!Ctor) fail(`input '${t.name}': type ${t.type} cannot be passed to onnxruntime-node`);
    // Copy into a fresh, aligned buffer (the file's offsets need not be).
    const ab = new ArrayBuffer(t.nbytes);
    new Uint8Array(ab).set(bin.subarray(t.offset, t.offset + t.nbytes));
    feeds[t.name] = new ort.Tensor(t.type, new Ctor(ab), t.shape);
  }

  const opts = {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: optimize ? 'all' : 'disabled', executionProviders: ['cpu'],
  };
  if (profile) Object.assign(opts, { enableProfiling: true, profileFilePrefix: profile });
  if (!spin) opts.extra = { session: { intra_op: { allow_spinning: '0' } } };
  if (saveOptimized) Object.assign(opts, { optimizedModelFilePath: saveOptimized, logSeverityLevel: 3 });
  let session, first;
  const t0 = process.hrtime.bigint();
  try {
    session = await ort.InferenceSession.create(modelPath, opts);
    first = await session.run(feeds);
  } catch (e) { fail(e.message); }
  const createMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const [check, detail] = compareExpected(index, bin, first);
  process.stdout.write(`READY ${createMs.toFixed(3)} ${check} ${detail.replace(/\s+/g, ' ')}\n`);

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const w = line.trim().split(/\s+/);
    if (w[0] === 'quit') break;
    if (w[0] !== 'run' || w.length !== 3) fail(`bad command '${line}'`);
    const warm = parseInt(w[1], 10), n = parseInt(w[2], 10);
    const ms = new Array(n);
    try {
      for (let i = 0; i < warm; i++) await session.run(feeds);
      var busy0 = machineBusyMs(), cpu0 = process.cpuUsage(), wall0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        const t = process.hrtime.bigint();
        await session.run(feeds);
        ms[i] = Number(process.hrtime.bigint() - t) / 1e6;
      }
    } catch (e) { fail(e.message); }
    const wall = Number(process.hrtime.bigint() - wall0) / 1e6;
    const cpu = process.cpuUsage(cpu0);
    const busy = busy0 < 0 ? -1 : machineBusyMs() - busy0;
    process.stdout.write(`OK ${median(ms).toFixed(6)} ${Math.min(...ms).toFixed(6)} ${wall.toFixed(3)} ` +
      `${((cpu.user + cpu.system) / 1000).toFixed(3)} ${busy.toFixed(3)}\n`);
  }
  rl.close();
  if (profile) printProfile(session, profile);
  await session.release();
  process.exit(0);
}

main().catch((e) => fail(e && e.message ? e.message : e));
