# Item 11: build-data on an empty corpus said "0 examples in 0 shards" and exited 0.
setup() { : >empty.txt; }
cmd=(build-data --input empty.txt --vocab vocab.txt --output empty-shards)
names=("empty.txt" "no examples")
