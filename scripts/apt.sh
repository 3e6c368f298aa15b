# Sourced by the test set-up's install scripts: Debian packages installed as root, or through
# sudo, quietly. Each function fails with the command to run by hand where there is no apt-get
# or no way to become root. The caller sets `what` (its name, for the messages).

# as_root COMMAND...: run a command as root.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "$what: not root and no sudo; run as root: $*" >&2
    return 1
  fi
}

# apt_install PACKAGE...: apt-get update, then install the packages without questions.
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$what: no apt-get here; install $* by hand" >&2
    return 1
  fi
  echo "$what: installing $* (Debian packages) for the tests"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
