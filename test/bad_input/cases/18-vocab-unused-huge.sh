# Item 9: `build-vocab --unused 100000000000` built the unused tokens (~100 MB/s) before its size
# check on main.
cmd=(build-vocab --input corpus.txt --vocab-size 1000 --unused 100000000000 --output new.txt)
names=("--unused 100000000000")
limit=10
