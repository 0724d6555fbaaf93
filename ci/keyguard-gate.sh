#!/usr/bin/env bash
# keyguard's CI schema gate: the file registry of this checkout against itself at the base ref.
# Used by the GitHub Action (action.yml) and usable as is in any CI (see docs: GitLab CI).
#
#   KEYGUARD_BASE     the base branch or ref (required; e.g. main, or origin/main)
#   KEYGUARD_SCHEMAS  the file registry folder (default: schemas)
#   KEYGUARD_SARIF    where to write the SARIF report (default: keyguard.sarif; empty: none)
#   KEYGUARD_FORMAT   the report printed to the log: text, github (annotations) ... (default text)
#
# A shallow clone (GitHub's and GitLab's default) lacks the base: it is fetched here, one commit
# deep, before the gate runs. Exit codes are keyguard's: 0 safe, 1 breaking, 2 bad input, ...
set -euo pipefail

base="${KEYGUARD_BASE:?set KEYGUARD_BASE to the base branch, e.g. main}"
schemas="${KEYGUARD_SCHEMAS:-schemas}"
sarif="${KEYGUARD_SARIF-keyguard.sarif}"
format="${KEYGUARD_FORMAT:-text}"

ref="$base"
if ! git rev-parse --verify --quiet "${ref}^{commit}" >/dev/null; then
  branch="${base#origin/}"
  ref="origin/${branch}"
  if ! git rev-parse --verify --quiet "${ref}^{commit}" >/dev/null; then
    echo "keyguard-gate: fetching ${branch} from origin (the clone does not hold it)" >&2
    git fetch --no-tags --depth=1 origin "+refs/heads/${branch}:refs/remotes/origin/${branch}" >&2
  fi
fi

status=0
if [ -n "$sarif" ]; then
  keyguard check --registry "file://./${schemas#./}" --against "git:${ref}" \
    --format sarif --output "$sarif" || status=$?
  if [ "$status" -ge 2 ]; then
    exit "$status"
  fi
fi
keyguard check --registry "file://./${schemas#./}" --against "git:${ref}" --format "$format" \
  || status=$?
exit "$status"
