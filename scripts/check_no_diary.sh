#!/usr/bin/env bash
# Fails when the code or its documentation reads as a measurement diary again: numbered work
# sessions, dates of work, "this crate's reference machine", or timings of one machine.
# History stays in git; a comment says why, and names the benchmark that measures a claim
# (for example "measured by benches/gram_blocks.rs"); the numbers live in benches/RESULTS.md.
#
#   bash scripts/check_no_diary.sh          # from anywhere in the repository
#
# What is checked where:
# - src/, python/, README.md, ARCHITECTURE.md, DECISIONS.md: sessions, dates of work, machine
#   phrases and timings (a number with ns / us / ms, "N s against", GFLOP/s and GB/s rates).
# - docs/ and benches/RESULTS.md: sessions, dates of work and machine phrases only; they report
#   measured numbers by design, each with the command and commit that produced it.
# Not matched on purpose: paper years and citations ("Fu et al. 2011", "TPAMI 28(12), 2006"),
# identifiers such as `timeout_ms` or `from_millis(50)`, and result files named after their run
# (`peers_s38_grid_path.txt`).
set -euo pipefail
cd "$(dirname "$0")/.."

# A numbered work session: "session 33", "Session 35's", "sessions 34-37", "session-30".
session='\b[Ss]essions?[ -]?[0-9]+'
# A date of work (ISO form); a year alone is a citation.
date_of_work='\b20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])\b'
# One machine named as the measure of a claim.
machine="reference machine|\\b[0-9]+-core (VM|machine)\\b|\\bon this (VM|virtual machine)\\b"
# A timing: "190 us", "3.10 ms", "1.4 ns", "12 µs", "5 s against", "45 GFLOP/s", "1.9 GB/s".
timing='\b[0-9][0-9.,]*[ ]?(ns|us|µs|μs|ms)\b'
timing+='|\b[0-9][0-9.,]* ?s (against|instead of)\b'
timing+='|[0-9] ?[GMT](FLOP|B)/s\b'

# Lines that may keep a match until their file is rewritten by its owner: "path:fixed text".
allow=()

status=0
report() { # $1: label, $2: pattern, rest: paths
  local label=$1 pattern=$2
  shift 2
  local paths=()
  for p in "$@"; do [ -e "$p" ] && paths+=("$p"); done
  [ ${#paths[@]} -eq 0 ] && return 0
  local hits
  hits=$(grep -rEnI --include='*.rs' --include='*.py' --include='*.pyi' --include='*.md' \
    --include='*.toml' --include='*.txt' --include='*.rst' --include='*.h' --include='*.c' \
    -e "$pattern" "${paths[@]}" || true)
  local kept="" line a
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    for a in "${allow[@]}"; do
      if [[ $line == "${a%%:*}:"* && $line == *"${a#*:}"* ]]; then continue 2; fi
    done
    kept+="$line"$'\n'
  done <<< "$hits"
  hits=${kept%$'\n'}
  if [ -n "$hits" ]; then
    echo "check_no_diary: $label found (state the reason and name the benchmark instead):" >&2
    printf '%s\n' "$hits" >&2
    status=1
  fi
}

code=(src python README.md ARCHITECTURE.md DECISIONS.md)
report "a session number" "$session" "${code[@]}" docs benches/RESULTS.md
report "a date of work" "$date_of_work" "${code[@]}" docs benches/RESULTS.md
report "a one-machine phrase" "$machine" "${code[@]}" docs benches/RESULTS.md
report "a timing of one machine" "$timing" "${code[@]}"

if [ "$status" -eq 0 ]; then
  echo "check_no_diary: no session numbers, dates of work or one-machine timings"
fi
exit "$status"
