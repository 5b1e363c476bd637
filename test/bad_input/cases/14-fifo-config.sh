# Item 8: a FIFO given as the config.
setup() { mkfifo pipe.yaml; }
cmd=(pretrain --config pipe.yaml)
names=("pipe.yaml: is a FIFO")
limit=10
