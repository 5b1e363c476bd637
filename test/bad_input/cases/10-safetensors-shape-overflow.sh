# Item 5: a safetensors shape whose element count overflows 64 bits and wraps to the tensor's
# real size (UBSan overflow in numel on main, and the file is accepted).
setup() {
  python3 - run/checkpoint-00000002/trainer_state.safetensors <<'PY'
import json, struct, sys
path = sys.argv[1]
raw = open(path, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
# a x b = 1 (mod 2^64) with a, b < 2^63: [count, a, b] claims count x a x b values.
a = (1 << 40) + 1
b = pow(a, -1, 1 << 64)
while b >= 1 << 63:
    a += 2
    b = pow(a, -1, 1 << 64)
count = header['optimizer.m']['shape'][0]
header['optimizer.m']['shape'] = [count, a, b]
text = json.dumps(header).encode()
text += b' ' * ((8 - len(text) % 8) % 8)
open(path, 'wb').write(struct.pack('<Q', len(text)) + text + raw[8 + n:])
PY
}
cmd=(pretrain --config tiny.yaml --resume run)
names=(run/checkpoint-00000002/trainer_state.safetensors "optimizer.m")
