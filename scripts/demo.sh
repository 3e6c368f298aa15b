#!/usr/bin/env bash
# The main job: set up (when needed), then benchmark the built-in task suite with its honest
# solutions, and a showcase of examples (a correct kernel, a subtly wrong one, exploits), writing
# a review packet per verification and printing the leaderboards.
#   scripts/demo.sh            full mode (3 seeds, 6 s timing budget, torch.compile baseline)
#   scripts/demo.sh --quick    2 seeds, the tasks' declared shapes only, 2 s timing budget
#                              on the default shape, two verifications at a time
#   scripts/demo.sh --serve    then serve the stored results (kernelproof serve, on loopback),
#                              making a token in reports/tokens.jsonl when there is none
# Results are stored in reports/kernelproof.db; a rerun resumes (add --no-resume to redo).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$KP_ROOT/scripts/bootstrap.sh"
profile=bench
jobs=1
serve=0
extra=()
for argument in "$@"; do
  case "$argument" in
    --quick) profile=quick; jobs=2 ;;
    --serve) serve=1 ;;
    *) extra+=("$argument") ;;
  esac
done
cd "$KP_ROOT"
mkdir -p reports
kp=("$KP_VENV/bin/kernelproof")
db="sqlite:///$KP_ROOT/reports/kernelproof.db"
"${kp[@]}" bench tasks --solutions tasks/solutions --profile "$profile" --db "$db" \
  --packets reports/suite --json reports/suite/summary.json --label "suite-$profile" \
  --jobs "$jobs" "${extra[@]}"
"${kp[@]}" bench examples --solutions examples/showcase --profile "$profile" --db "$db" \
  --packets reports/showcase --json reports/showcase/summary.json --label "showcase-$profile" \
  "${extra[@]}"
echo "review packets: reports/suite/*.html and reports/showcase/*.html"
tokens="$KP_ROOT/reports/tokens.jsonl"
serve_command=("${kp[@]}" serve tasks --db "$db" --tokens "$tokens" --profile "$profile")
echo "serve these results (leaderboards, packets, history, submissions over HTTP):"
echo "  ${serve_command[*]}"
if [ "$serve" -eq 1 ]; then
  if [ ! -s "$tokens" ]; then
    echo "a token for submissions (shown once; only its hash is kept in $tokens):"
    "${kp[@]}" token create demo --tokens "$tokens"
  fi
  exec "${serve_command[@]}"
fi
