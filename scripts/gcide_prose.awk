# The prose-like paragraphs of scripts/english_corpus.sh's GCIDE text (one paragraph a line, blank
# lines kept as document ends), for the demo: the remnant of an etymology split across lines
# ("...] "), the sense number ("3. "), "Note: " and the subject labels ("(Bot.) ") are taken off,
# and a paragraph is kept when it has at least 12 words and at most one semicolon per 10 words
# (the others are headword glosses and lists of synonyms, where a replaced word is often another
# synonym); a paragraph met before is dropped (GCIDE repeats glosses under several headwords, and
# a repeat would put the same text in training and held-out lines). docs/QUALITY.md
# measures what it changes.
# Usage: awk -f scripts/gcide_prose.awk gcide.txt > prose.txt
/^$/ { print; next }
{
  line = $0
  if (match(line, /^[^[]*\] */)) line = substr(line, RLENGTH + 1)
  sub(/^Note: */, "", line)
  sub(/^[0-9]+\. */, "", line)
  while (match(line, /^\([A-Z][A-Za-z. &]*\) */)) line = substr(line, RLENGTH + 1)
  words = split(line, w, " ")
  semicolons = gsub(/;/, ";", line)
  if (words >= 12 && semicolons * 10 <= words && !seen[line]++) print line
}
