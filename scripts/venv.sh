# Shared by scripts/demo.sh and scripts/test.sh (sourced, not run): the distribution packages
# they need, a python3 >= 3.11, and the project virtualenv .venv/ with gpuledger installed in
# it editable. PYTHON picks the interpreter (default: python3 on PATH).
#
#   gl_python                  find $PYTHON, install Debian's python3 if it is missing, check >= 3.11
#   gl_debian_packages PKG...  install those not installed yet (apt-get; sudo when not root)
#   gl_venv [EXTRAS]           create or reuse .venv, pip install -e ".[EXTRAS]" unless done already
#
# Re-runs are fast: .venv/.gpuledger-installed records a hash of pyproject.toml and the
# interpreter, and the extras installed; nothing is installed again while they match. An
# install with the test extras also serves the demo.

GL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GL_VENV=$GL_ROOT/.venv
GL_STAMP=$GL_VENV/.gpuledger-installed
GL_PY=${PYTHON:-python3}
GL_PY_VERSION=
GL_PY_FULL=
GL_PY_REAL=
_gl_apt_updated=

gl_say() { echo "gpuledger: $*"; }
gl_die() { echo "gpuledger: error: $*" >&2; exit 1; }

gl_debian_packages() {
    local pkg missing=() sudo=""
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
        gl_say "no apt-get here (not Debian/Ubuntu): install by hand if missing: $*"
        return 0
    fi
    # Installed packages and what they provide (Ubuntu's chromium is provided by chromium-browser).
    local installed
    installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}, ${Provides}\n' 2>/dev/null \
        | awk '$1 == "ii" { $1 = ""; n = split($0, p, ","); for (i = 1; i <= n; i++) { sub(/\(.*/, "", p[i]); gsub(/ /, "", p[i]); if (p[i] != "") print p[i] } }')
    for pkg in "$@"; do
        grep -qxF "$pkg" <<<"$installed" || missing+=("$pkg")
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || gl_die "installing Debian packages (${missing[*]}) needs root or sudo"
        sudo=sudo
    fi
    gl_say "installing Debian packages: ${missing[*]}"
    local log
    if [ -z "$_gl_apt_updated" ]; then
        log=$($sudo apt-get update -qq 2>&1) || gl_die "apt-get update failed:
$log"
        _gl_apt_updated=1
    fi
    # Quiet unless it fails: maintainer scripts chatter (systemd symlinks, debconf) on stderr.
    log=$($sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" 2>&1) \
        || gl_die "could not install Debian packages (${missing[*]}):
$log"
}

gl_python() {
    [ -z "$GL_PY_REAL" ] || return 0
    if ! command -v "$GL_PY" >/dev/null 2>&1; then
        if [ -z "${PYTHON:-}" ] && command -v apt-get >/dev/null 2>&1; then
            gl_debian_packages python3
        fi
        command -v "$GL_PY" >/dev/null 2>&1 \
            || gl_die "no $GL_PY found: install Python 3.11 or newer, or point PYTHON=/path/to/python3 at one"
    fi
    GL_PY=$(command -v "$GL_PY")
    local info ok
    info=$("$GL_PY" -c 'import os, platform, sys; v = sys.version_info; sys.stdout.write("%d.%d %d %s %s\n" % (v[0], v[1], v >= (3, 11), platform.python_version(), os.path.realpath(sys.executable)))') \
        || gl_die "$GL_PY does not run"
    read -r GL_PY_VERSION ok GL_PY_FULL GL_PY_REAL <<<"$info"
    [ "$ok" = 1 ] || gl_die "gpuledger needs Python 3.11 or newer; $GL_PY is Python $GL_PY_VERSION. Install a newer one and run again with PYTHON=/path/to/python3.11 (or newer)."
}

_gl_hash() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else cksum; fi | cut -d' ' -f1; }

# The interpreter .venv was made from (its real path); fails if .venv does not run or lacks pip.
_gl_venv_base() {
    [ -x "$GL_VENV/bin/python" ] || return 1
    "$GL_VENV/bin/python" -c 'import os, sys, pip; print(os.path.realpath(sys._base_executable))' 2>/dev/null
}

_gl_make_venv() {
    local err
    gl_say "creating .venv with $GL_PY (Python $GL_PY_VERSION)"
    if err=$("$GL_PY" -m venv "$GL_VENV" 2>&1); then return 0; fi
    rm -rf "$GL_VENV"
    # Debian/Ubuntu ship the venv module without ensurepip: it comes with python3-venv.
    if command -v dpkg-query >/dev/null 2>&1 && dpkg-query -S "$GL_PY_REAL" >/dev/null 2>&1; then
        gl_debian_packages python3-venv "python$GL_PY_VERSION-venv"
        if err=$("$GL_PY" -m venv "$GL_VENV" 2>&1); then return 0; fi
        rm -rf "$GL_VENV"
    fi
    gl_die "could not create .venv with $GL_PY (on Debian/Ubuntu it needs python3-venv):
$err"
}

gl_venv() {
    local extras=${1:-} key have stamp_key stamp_extras
    gl_python
    if [ -e "$GL_VENV" ]; then
        have=$(_gl_venv_base) || have=""
        if [ -z "$have" ]; then
            gl_say ".venv is broken (no working python or pip): recreating it"
            rm -rf "$GL_VENV"
        elif [ "$have" != "$GL_PY_REAL" ]; then
            gl_say ".venv was made with $have, not $GL_PY_REAL: recreating it"
            rm -rf "$GL_VENV"
        fi
    fi
    [ -e "$GL_VENV" ] || _gl_make_venv

    key=$({ cat "$GL_ROOT/pyproject.toml"; echo "$GL_PY_REAL $GL_PY_FULL"; } | _gl_hash)
    if [ -f "$GL_STAMP" ]; then
        read -r stamp_key stamp_extras <"$GL_STAMP" || true
        if [ "$stamp_key" = "$key" ] && { [ -z "$extras" ] || [[ ",${stamp_extras:-}," == *",$extras,"* ]]; }; then
            return 0
        fi
    fi
    rm -f "$GL_STAMP"
    gl_say "installing gpuledger (editable)${extras:+ with its [$extras] extras} and its dependencies into .venv (pip; minutes the first time)"
    (cd "$GL_ROOT" && "$GL_VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".${extras:+[$extras]}") \
        || gl_die "pip install into .venv failed (see above)"
    echo "$key $extras" >"$GL_STAMP"
}
