# Item 10: a directory given as vocab.txt (basic_filebuf::underflow on main).
setup() { mkdir vocabdir; }
cmd=(pretrain --config tiny.yaml --set data.vocab=vocabdir --set checkpoint.dir=fresh)
names=("vocabdir: is a directory")
