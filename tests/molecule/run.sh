#!/usr/bin/env bash
# Run every Molecule scenario (or those named), MOLECULE_JOBS at a time: they mostly wait on
# podman, apt and the trials' clocks, not on the CPU. Each writes its own log; the seconds
# each took go to $MOLECULE_LOGS/times, which also orders the next run (slowest first); a fresh
# clone has none, and takes the order from molecule/durations (a CI run's times, kept here: two
# at a time, slowest first ends some 45 s sooner than in name order).
# Prints the log of any scenario that failed, and fails if one did.
set -uo pipefail
cd "$(dirname "$(realpath "$0")")/.."   # tests/: Molecule reads molecule/<scenario>/molecule.yml
export MOLECULE_LOGS=${MOLECULE_LOGS:-/var/tmp/innomatrix-molecule-logs}
mkdir -p "$MOLECULE_LOGS"

if (( $# )); then
  scenarios=("$@")
else
  times="$MOLECULE_LOGS/times"
  [[ -s $times ]] || times=molecule/durations
  mapfile -t scenarios < <(for file in molecule/*/molecule.yml; do
    name=$(basename "$(dirname "$file")")
    echo "$(awk -v s="$name" '$1 == s { print $2 }' "$times" 2>/dev/null | grep . || echo 9999) $name"
  done | sort -rn | cut -d' ' -f2)
fi

scenario() {
  local started=$SECONDS outcome=ok
  molecule --base-config molecule/base.yml test --scenario-name "$1" >"$MOLECULE_LOGS/$1.log" 2>&1 || outcome=FAILED
  printf '%-22s %4d s  %s\n' "$1" $((SECONDS - started)) "$outcome"
}
export -f scenario

started=$SECONDS
printf '%s\n' "${scenarios[@]}" | xargs -P "${MOLECULE_JOBS:-2}" -I{} bash -c 'scenario {}' | tee "$MOLECULE_LOGS/times.new"
mv "$MOLECULE_LOGS/times.new" "$MOLECULE_LOGS/times"
printf '%-22s %4d s  (%s at a time)\n' total $((SECONDS - started)) "${MOLECULE_JOBS:-2}"
failed=$(awk '$4 != "ok" { print $1 }' "$MOLECULE_LOGS/times")
for name in $failed; do
  echo "=== $name: $MOLECULE_LOGS/$name.log (last 60 lines)"
  sed 's/\x1b\[[0-9;]*m//g' "$MOLECULE_LOGS/$name.log" | tail -60
done
# That tail shows the destroy after a failure; a CI summary keeps only the last lines of output.
# So end with each failed task's own message and the free disk.
for name in $failed; do
  echo "=== $name: failed tasks"
  sed 's/\x1b\[[0-9;]*m//g' "$MOLECULE_LOGS/$name.log" \
    | grep -E -A2 '^(fatal|failed): |FAILED!|ERROR!' | grep -v -E '^(--|\s*$)' | cut -c1-300 | tail -12
done
[[ -z "$failed" ]] || echo "disk free: $(df -h --output=avail,target / /var/tmp | tail -n +2 | tr -s ' ' | paste -sd';')"
[[ -z "$failed" ]]
