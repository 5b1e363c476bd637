# Item 8: a FIFO given as the vocabulary blocked forever in open() on main.
setup() { mkfifo pipe.txt; }
cmd=(pretrain --config tiny.yaml --set data.vocab=pipe.txt --set checkpoint.dir=fresh)
names=("pipe.txt: is a FIFO")
limit=10
