# Sourced by the scripts: make sure .venv exists with the project installed (with EXTRAS), from
# requirements.lock, by uv (installed from the package index into the cache once) or, when uv
# cannot be had, by pip (scripts/setup_venv.py says which). Reinstalls only when pyproject.toml,
# the lock, the extras or the set-up itself change (what it writes, e.g. the project's metadata,
# is then written anew), so repeat runs start at once. Nothing compiles the project's
# modules ahead: Python writes the bytecode of what a command imports as it first imports it,
# also where the machine says otherwise (PYTHONDONTWRITEBYTECODE, unset for what the scripts
# run: every start would compile the ~300 modules of the command line again, about a second).
ensure_venv() {
  unset PYTHONDONTWRITEBYTECODE
  local extras="$1"
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local venv="$root/.venv"
  local py="${INVENTORY_PYTHON:-python3.11}"
  command -v "$py" >/dev/null 2>&1 || py=python3
  local stamp="$venv/.inventory-installed"
  local want
  want="$(cat "$root/pyproject.toml" "$root/requirements.lock" "$root/scripts/setup_venv.py"
    echo "extras=$extras")"
  want="$(printf '%s' "$want" | sha256sum | cut -c1-16)"
  if [ ! -x "$venv/bin/python" ] || [ ! -f "$stamp" ] || ! grep -qx "$want" "$stamp"; then
    "$py" "$root/scripts/setup_venv.py" "$venv" "$extras" >&2
    # Extras accumulate: keep one stamp line per installed set.
    echo "$want" >> "$stamp"
  fi
}
