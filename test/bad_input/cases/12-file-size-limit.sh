# Item 7: a write beyond `ulimit -f` (SIGXFSZ killed the process silently on main and left a
# .tmp directory): one error line, no temporary left, the saved checkpoints untouched.
launcher=(bash -c 'ulimit -f 16; exec "$0" "$@"')
cmd=(pretrain --config tiny.yaml --resume run)
names=(checkpoint-00000003 "File too large")
may_change=(run/metrics.jsonl)
check() {
  if ls -d run/.checkpoint-* run/*/*.tmp.* 2>/dev/null; then echo "temporaries left"; return 1; fi
}
