#!/usr/bin/env node
// ONNX Runtime side of make_zoo_models.py: runs one model on given inputs and
// writes its outputs (the expected outputs of the model folder), and times it.
//
// usage: node ort_expected.js MODEL.onnx DIR [--iters N] [--warmup N] [--calibrate]
//   DIR/io_in.json : {"inputs": [{"name", "type", "shape", "file"}]}, with raw
//                    little-endian data in DIR/<file> (type float32 | int64 | bool).
//   writes DIR/io_out.json : {"ort_version", "median_ms", "min_ms", "create_ms",
//                    "outputs": [{"name", "type", "shape", "file"}]} and
//                    DIR/<file> (raw little-endian data) per output.
//   --calibrate: io_in.json also has "params" (same form as "inputs": weights
//                that MODEL takes as graph inputs)
//                and "calib": [{"params": [names], "out": tensor, "target": rms}].
//                In that order, runs the model fetching "out", and scales the
//                params by f = target / rms(out) (so that out gets rms target,
//                later steps seeing the scaled weights). Writes io_out.json
//                {"factors": [f per step], "rms": [rms before scaling]}; no timing.
// Session options as ../../shared/bench/ort/bench.js: 1 intra-op thread,
// 1 inter-op thread, sequential, graph optimisation 'all', CPU EP.
// ORT is loaded from $ORT_NODE_MODULES/onnxruntime-node
// (default ~/.cache/poprt-ort/node_modules).
'use strict';
const fs = require('fs');
const path = require('path');

const ORT_DIR = process.env.ORT_NODE_MODULES ||
  path.join(process.env.HOME || '.', '.cache', 'poprt-ort', 'node_modules');
const ort = require(path.join(ORT_DIR, 'onnxruntime-node'));

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array };

function readTensor(dir, t) {
  const buf = fs.readFileSync(path.join(dir, t.file));
  // copy into a fresh, aligned ArrayBuffer (small Buffers come from a shared pool)
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
  const Ctor = ARRAYS[t.type];
  if (!Ctor) throw new Error(`unsupported input type ${t.type}`);
  return new ort.Tensor(t.type, new Ctor(ab), t.shape);
}

async function main() {
  const argv = process.argv.slice(2);
  let iters = 10, warmup = 2, calibrate = false;
  const pos = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--iters') iters = parseInt(argv[++i], 10);
    else if (argv[i] === '--warmup') warmup = parseInt(argv[++i], 10);
    else if (argv[i] === '--calibrate') calibrate = true;
    else pos.push(argv[i]);
  }
  if (pos.length !== 2) {
    console.error('usage: node ort_expected.js MODEL.onnx DIR [--iters N] [--warmup N]');
    process.exit(2);
  }
  const [model, dir] = pos;
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'io_in.json'), 'utf8'));
  const feeds = {};
  for (const t of spec.inputs) feeds[t.name] = readTensor(dir, t);

  const opts = {
    executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all', logSeverityLevel: 3,
  };
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, opts);
  const createMs = Number(process.hrtime.bigint() - t0) / 1e6;

  if (calibrate) {
    for (const p of spec.params) feeds[p.name] = readTensor(dir, p);
    const factors = [], rmsList = [];
    for (const step of spec.calib) {
      const r = await session.run(feeds, [step.out]);
      const d = r[step.out].data;
      let ss = 0;
      for (let i = 0; i < d.length; i++) ss += d[i] * d[i];
      const rms = Math.sqrt(ss / d.length);
      const f = rms > 0 && Number.isFinite(rms) ? step.target / rms : 1;
      for (const name of step.params) {
        const t = feeds[name];
        feeds[name] = new ort.Tensor(t.type, t.data.map((v) => v * f), t.dims);
      }
      factors.push(f);
      rmsList.push(rms);
    }
    fs.writeFileSync(path.join(dir, 'io_out.json'), JSON.stringify({ factors, rms: rmsList }));
    return;
  }

  let out = await session.run(feeds);
  for (let i = 1; i < warmup; i++) out = await session.run(feeds);
  const times = [];
  for (let i = 0; i < iters; i++) {
    const s = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  times.sort((a, b) => a - b);

  const outputs = [];
  session.outputNames.forEach((name, k) => {
    const t = out[name];
    const file = `out_${k}.bin`;
    const d = t.data;
    fs.writeFileSync(path.join(dir, file), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    outputs.push({ name, type: t.type, shape: t.dims.map(Number), file });
  });
  const res = {
    ort_version: ort.env.versions ? ort.env.versions.common : '?',
    median_ms: times[Math.floor(times.length / 2)], min_ms: times[0], create_ms: createMs, outputs,
  };
  fs.writeFileSync(path.join(dir, 'io_out.json'), JSON.stringify(res, null, 1));
}

main().catch((e) => { console.error('ERR ' + (e && e.stack || e)); process.exit(1); });
