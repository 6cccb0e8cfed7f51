#!/usr/bin/env bash
# Checks that the repository explains itself: no file cites the developer notes that lived outside it
# (seed-castin.md, seed-flows.md, prior-art.md, anything under ../shared or shared/notes). The mathematics
# those notes held is in docs/math/; code comments cite docs/math/FILE.md#anchor instead.
#
#   scripts/check-self-contained.sh [SOURCE_DIR]     (default: the checkout this script is in)
#
# Prints every offending file:line:text and exits 1; exits 0 when there is none. It reads the files git
# tracks (plus new files git does not ignore), or, outside a git checkout, every file under SOURCE_DIR except
# build directories. ctest runs it as the test `self_contained` (tests/CMakeLists.txt).
#
# Allowed, each for a reason (ALLOWED below, path prefixes relative to SOURCE_DIR):
#   docs/                             the docs may name the former notes; docs/math/README.md maps their old
#                                     section numbers to the new anchors for readers of old commits
#   scripts/check-self-contained.sh   names the patterns it looks for
# A reference to a machine's own setup outside the repository (for example a CI host's prepare script under a
# shared directory) would be a legitimate entry too; add it here with its reason. There is none today:
# scripts/dev.sh and .ci/run use nothing outside the checkout.
set -euo pipefail

root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
cd "$root"

PATTERN='seed-castin|seed-flows|prior-art\.md|\.\./shared|shared/notes'
ALLOWED=(
  docs/
  scripts/check-self-contained.sh
)

allowed() {
  local f=$1 a
  for a in "${ALLOWED[@]}"; do
    [[ $f == "$a"* ]] && return 0
  done
  return 1
}

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    [[ -f $f ]] && ! allowed "$f" && files+=("$f")
  done < <(git ls-files -z --cached --others --exclude-standard)
else
  while IFS= read -r -d '' f; do
    f=${f#./}
    allowed "$f" || files+=("$f")
  done < <(find . \( -name .git -o -name 'build*' \) -prune -o -type f -print0)
fi

if ((${#files[@]} == 0)); then
  echo "check-self-contained: no files found under $root" >&2
  exit 1
fi

# -I: skip binary files; -H: always name the file. xargs may run grep several times, and grep exits 1 where a
# batch has no match, so the decision is on the output, not on the exit status.
matches=$(printf '%s\0' "${files[@]}" | xargs -0 grep -nIHE -- "$PATTERN" || true)
if [[ -n $matches ]]; then
  echo "$matches"
  count=$(printf '%s\n' "$matches" | wc -l)
  echo "check-self-contained: $count reference(s) to notes outside the repository; cite docs/math/ instead" \
    "(docs/math/README.md maps the old section numbers)" >&2
  exit 1
fi
echo "check-self-contained: ${#files[@]} files, no references to notes outside the repository"
