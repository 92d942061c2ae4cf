# Sourced by the scripts: make sure .venv exists with the project installed (with EXTRAS).
# Reinstalls only when pyproject.toml or the extras change, so repeat runs start at once.
ensure_venv() {
  local extras="$1"
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local venv="$root/.venv"
  local py="${INVENTORY_PYTHON:-python3.11}"
  command -v "$py" >/dev/null 2>&1 || py=python3
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" >&2
  fi
  local stamp="$venv/.inventory-installed"
  local want; want="$(cat "$root/pyproject.toml"; echo "extras=$extras")"
  want="$(printf '%s' "$want" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ] || ! grep -qx "$want" "$stamp"; then
    local spec="$root"
    [ -n "$extras" ] && spec="$root[$extras]"
    echo "installing inventory into $venv (${extras:-no extras})" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -e "$spec" >&2
    # Extras accumulate: keep one stamp line per installed set.
    echo "$want" >> "$stamp"
  fi
}
