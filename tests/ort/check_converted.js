#!/usr/bin/env node
// Runs a model converted by poprt in ONNX Runtime (onnxruntime-node) on the
// inputs of an ONNX test folder and compares its outputs with the folder's
// expected outputs (those of the original float32 model).
//
// usage: node check_converted.js MODEL.onnx TEST_DATA_DIR [--opt disabled|basic|extended|all]
//                                 [--write-expected]
//   TEST_DATA_DIR holds input_K.pb / output_K.pb (serialized TensorProtos;
//   matched to the model's inputs and outputs by name, else by position).
//   --write-expected: run MODEL (the float32 original) on the inputs and
//   write its float32 outputs as output_K.pb instead of comparing; prints
//   "WROTE <n> outputs".
// Prints one line:
//   OK <max_abs> <max_rel> <cosine>   (over all float outputs; max_rel is
//                                      max|got - exp| / max|exp| per output)
//   ERR <message>                     (ORT rejected the model or failed to run it)
// Exits 0 for OK, 1 for ERR, 2 for usage errors.
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const dir = process.env.ORT_NODE_MODULES ||
    path.join(process.env.HOME || '.', '.cache', 'poprt-ort', 'node_modules');
  const p = path.join(dir, 'onnxruntime-node');
  return require(fs.existsSync(p) ? p : 'onnxruntime-node');
}

// ---- a TensorProto reader: the fields test data uses -------------------------
function varint(b, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    const c = b[pos.i++];
    v |= BigInt(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
    shift += 7n;
  }
}

// data_type numbers of TensorProto -> [ort type name, typed array, bytes]
const DTYPES = {
  1: ['float32', Float32Array, 4], 2: ['uint8', Uint8Array, 1], 3: ['int8', Int8Array, 1],
  5: ['int16', Int16Array, 2], 6: ['int32', Int32Array, 4], 7: ['int64', BigInt64Array, 8],
  9: ['bool', Uint8Array, 1], 10: ['float16', Uint16Array, 2], 11: ['float64', Float64Array, 8],
  12: ['uint32', Uint32Array, 4], 13: ['uint64', BigUint64Array, 8],
};

function readTensor(file) {
  const b = fs.readFileSync(file);
  const pos = {i: 0};
  const t = {dims: [], dtype: 0, name: '', raw: null, f: [], i32: [], i64: [], d: []};
  while (pos.i < b.length) {
    const key = Number(varint(b, pos)), field = key >> 3, wt = key & 7;
    if (wt === 0) {
      const v = varint(b, pos);
      if (field === 1) t.dims.push(Number(v));
      else if (field === 2) t.dtype = Number(v);
      else if (field === 5) t.i32.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) t.i64.push(BigInt.asIntN(64, v));
    } else if (wt === 2) {
      const len = Number(varint(b, pos)), s = pos.i, e = s + len;
      pos.i = e;
      if (field === 8) t.name = b.toString('utf8', s, e);
      else if (field === 9) t.raw = b.subarray(s, e);
      else if (field === 4) for (let k = s; k < e; k += 4) t.f.push(b.readFloatLE(k));
      else if (field === 10) for (let k = s; k < e; k += 8) t.d.push(b.readDoubleLE(k));
      else if (field === 1 || field === 5 || field === 7) {
        const p2 = {i: s};
        while (p2.i < e) {
          const v = varint(b, p2);
          if (field === 1) t.dims.push(Number(v));
          else if (field === 5) t.i32.push(Number(BigInt.asIntN(32, v)));
          else t.i64.push(BigInt.asIntN(64, v));
        }
      }
    } else if (wt === 5) {
      if (field === 4) t.f.push(b.readFloatLE(pos.i));
      pos.i += 4;
    } else if (wt === 1) {
      if (field === 10) t.d.push(b.readDoubleLE(pos.i));
      pos.i += 8;
    } else throw new Error(`${file}: unsupported wire type ${wt}`);
  }
  const dt = DTYPES[t.dtype];
  if (!dt) throw new Error(`${file}: unsupported data_type ${t.dtype}`);
  const [type, Arr, size] = dt;
  let data;
  if (t.raw) {
    const copy = new Uint8Array(t.raw); // aligned copy
    data = new Arr(copy.buffer, 0, copy.length / size);
  } else if (t.dtype === 1) data = Float32Array.from(t.f);
  else if (t.dtype === 11) data = Float64Array.from(t.d);
  else if (t.dtype === 7) data = BigInt64Array.from(t.i64);
  else if (t.dtype === 13) data = BigUint64Array.from(t.i64, (x) => BigInt.asUintN(64, x));
  else data = Arr.from(t.i32);
  return {name: t.name, type, dims: t.dims, data};
}

function half2f(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function floats(t) {
  if (t.type === 'float16' && t.data instanceof Uint16Array) return Float64Array.from(t.data, half2f);
  return Float64Array.from(t.data, Number);
}

// ---- a TensorProto writer: float32 tensors with raw_data ---------------------
function pbVarint(n) {
  const o = [];
  let v = BigInt(n);
  do {
    let c = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) c |= 0x80;
    o.push(c);
  } while (v > 0n);
  return Buffer.from(o);
}

function writeTensor(file, name, dims, data) {
  const parts = [];
  for (const d of dims) parts.push(pbVarint(1 << 3), pbVarint(d)); // dims
  parts.push(pbVarint(2 << 3), pbVarint(1)); // data_type FLOAT
  const nb = Buffer.from(name, 'utf8');
  parts.push(pbVarint(8 << 3 | 2), pbVarint(nb.length), nb); // name
  const raw = Buffer.from(Float32Array.from(data).buffer);
  parts.push(pbVarint(9 << 3 | 2), pbVarint(raw.length), raw); // raw_data
  fs.writeFileSync(file, Buffer.concat(parts));
}

function listPb(dir, prefix) {
  return fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
    .sort((a, b) => parseInt(a.slice(prefix.length)) - parseInt(b.slice(prefix.length)))
    .map((f) => readTensor(path.join(dir, f)));
}

async function main() {
  const args = process.argv.slice(2);
  let opt = 'all';
  const k = args.indexOf('--opt');
  if (k >= 0) opt = args.splice(k, 2)[1];
  const w = args.indexOf('--write-expected');
  const write = w >= 0;
  if (write) args.splice(w, 1);
  const [model, dir] = args;
  if (!model || !dir) {
    console.error('usage: node check_converted.js MODEL.onnx TEST_DATA_DIR');
    process.exit(2);
  }
  const ort = loadOrt();
  let sess;
  try {
    sess = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
      graphOptimizationLevel: opt, logSeverityLevel: 3});
  } catch (e) {
    throw new Error('load: ' + e.message);
  }
  const ins = listPb(dir, 'input_'), outs = listPb(dir, 'output_');
  const feeds = {};
  ins.forEach((t, k) => {
    const name = sess.inputNames.includes(t.name) ? t.name : sess.inputNames[k];
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  let res;
  try {
    res = await sess.run(feeds);
  } catch (e) {
    throw new Error('run: ' + e.message);
  }
  if (write) {
    sess.outputNames.forEach((name, k) => {
      const got = res[name];
      if (got.type !== 'float32') throw new Error(`output '${name}' is ${got.type}, not float32`);
      writeTensor(path.join(dir, `output_${k}.pb`), name, Array.from(got.dims, Number), got.data);
    });
    console.log(`WROTE ${sess.outputNames.length} outputs`);
    return;
  }
  let maxAbs = 0, maxRel = 0, dot = 0, na = 0, nb = 0;
  outs.forEach((t, k) => {
    const name = sess.outputNames.includes(t.name) ? t.name : sess.outputNames[k];
    const got = res[name];
    if (!got) throw new Error(`no output '${name}'`);
    const gd = Array.from(got.dims, Number);
    if (gd.join(',') !== t.dims.join(','))
      throw new Error(`output '${name}': shape [${gd}] != expected [${t.dims}]`);
    const g = floats(got), e = floats(t);
    let amax = 0, worst = 0;
    for (let i = 0; i < e.length; i++) {
      const err = Number.isFinite(g[i]) ? Math.abs(g[i] - e[i]) : Infinity;
      worst = Math.max(worst, err);
      amax = Math.max(amax, Math.abs(e[i]));
      dot += g[i] * e[i]; na += g[i] * g[i]; nb += e[i] * e[i];
    }
    maxAbs = Math.max(maxAbs, worst);
    maxRel = Math.max(maxRel, worst / Math.max(amax, 1e-12));
  });
  const cos = na === 0 && nb === 0 ? 1 : dot / Math.sqrt(na * nb);
  console.log(`OK ${maxAbs.toPrecision(3)} ${maxRel.toPrecision(3)} ${cos.toFixed(6)}`);
}

main().catch((e) => {
  console.log('ERR ' + String(e.message || e).replace(/\s+/g, ' ').slice(0, 300));
  process.exit(1);
});
