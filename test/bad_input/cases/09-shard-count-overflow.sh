# Item 5: a shard header with valid checksums and example_count = n + 2^59, so that
# example_count x seq_len x 2 wraps to the real payload size (ASan SEGV in `info` on main).
setup() {
  python3 - shards/shard-00000.bin <<'PY'
import struct, sys
raw = bytearray(open(sys.argv[1], 'rb').read())
count = struct.unpack_from('<Q', raw, 32)[0]
struct.pack_into('<Q', raw, 32, count + (1 << 59))
h = 0xcbf29ce484222325
for b in raw[:56]:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
struct.pack_into('<Q', raw, 56, h)
open(sys.argv[1], 'wb').write(raw)
PY
}
cmd=(info shards/shard-00000.bin)
names=("shards/shard-00000.bin")
