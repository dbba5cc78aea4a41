"""Turns the dump of ../shared/bench/ort/bench.js (--dump OUT: a JSON index and
OUT.bin) into an ONNX backend-test folder: DIR/model.onnx (a link to MODEL) and
DIR/test_data_set_0/input_K.pb, output_K.pb, ONNX Runtime's outputs on the
generated inputs. Needs python3-onnx and python3-numpy.

usage: python3 dump_to_testdata.py DUMP.json MODEL.onnx DIR
"""
import json
import os
import sys

import numpy as np
from onnx import numpy_helper

TYPES = {'float32': np.float32, 'float64': np.float64, 'int64': np.int64, 'int32': np.int32,
         'int8': np.int8, 'uint8': np.uint8, 'bool': np.bool_}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    index_path, model, out = sys.argv[1:]
    index = json.load(open(index_path))
    raw = open(os.path.join(os.path.dirname(index_path), index['bin']), 'rb').read()
    data = os.path.join(out, 'test_data_set_0')
    os.makedirs(data, exist_ok=True)
    link = os.path.join(out, 'model.onnx')
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(model), link)
    count = {'input': 0, 'output': 0}
    for t in index['tensors']:
        if t['type'] not in TYPES:
            sys.exit('%s: tensor %s of type %s' % (index_path, t['name'], t['type']))
        a = np.frombuffer(raw[t['offset']:t['offset'] + t['nbytes']],
                          dtype=TYPES[t['type']]).reshape(t['shape'])
        name = '%s_%d.pb' % (t['role'], count[t['role']])
        count[t['role']] += 1
        with open(os.path.join(data, name), 'wb') as f:
            f.write(numpy_helper.from_array(a, t['name']).SerializeToString())
    print('%s: %d inputs, %d outputs' % (out, count['input'], count['output']))


if __name__ == '__main__':
    main()
