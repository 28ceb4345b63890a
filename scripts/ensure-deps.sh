#!/usr/bin/env bash
# Installs what the build and the test suite need from Debian when it is
# missing and we may (root with apt-get): gcc for cgo, fuse3 for
# fusermount3, and Debian's torch and torchvision for the ImageFolder tests
# and examples; Azurite, the Azure Storage emulator, from npm into
# ${XDG_CACHE_HOME:-~/.cache}/deltafs-azurite (where storage/azstore/aztest finds
# it) when node and npm are there; and moto, the S3 emulator, with pip into
# a virtual environment at ${XDG_CACHE_HOME:-~/.cache}/deltafs-moto (where
# storage/s3store/s3test finds it). Each is installed
# once (later runs find it and print nothing); the first run says what it
# installs before it starts, since it takes minutes. Never fails the build
# by itself (the tests that need a missing piece fail with a message). What
# else the tests need they set up themselves (fusectl, for the FUSE
# connection's counters, is mounted by the test that reads it).
set -u
cachedir="${XDG_CACHE_HOME:-$HOME/.cache}"
AZURITE_VERSION=3.37.0
azdir="$cachedir/deltafs-azurite"
MOTO_VERSION=5.2.1
motodir="$cachedir/deltafs-moto"
need_moto=false
command -v moto_server >/dev/null 2>&1 || [ -x "$motodir/bin/moto_server" ] ||
  [ -x /root/.pyenv/shims/moto_server ] || need_moto=true

need=()
# gcc: the build uses cgo (NVML), and the GPU tests compile fakes with it.
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
/usr/bin/python3 -c 'import torchvision, PIL, numpy' >/dev/null 2>&1 ||
  need+=(python3-torch python3-torchvision python3-pil python3-numpy)
# Debian's python3 makes virtual environments only with python3-venv.
$need_moto && ! /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 && need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: missing ${need[*]}; install them (apt-get install ${need[*]}) to run every test" >&2
  else
    echo "ensure-deps: installing ${need[*]} with apt-get (gcc for the build; fusermount3 for the mounts; Debian's torch and torchvision for the ImageFolder tests and examples): once, a few minutes and about 600 MB, without output until it is done"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
      echo "ensure-deps: apt-get install ${need[*]} failed" >&2
  fi
fi

if ! command -v azurite-blob >/dev/null 2>&1 && [ ! -x "$azdir/node_modules/.bin/azurite-blob" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "ensure-deps: installing azurite@$AZURITE_VERSION (the Azure Storage emulator, for the Azure tests) with npm into $azdir: once, a minute or two"
    mkdir -p "$azdir" && npm install --silent --no-audit --no-fund --prefix "$azdir" "azurite@$AZURITE_VERSION" >/dev/null 2>&1 ||
      echo "ensure-deps: npm install azurite@$AZURITE_VERSION failed" >&2
  else
    echo "ensure-deps: missing azurite (the Azure tests need it); install node and npm, then run this again" >&2
  fi
fi

if $need_moto; then
  echo "ensure-deps: installing moto[server]==$MOTO_VERSION (the S3 emulator, for the S3 tests) with pip into $motodir: once, a minute or so"
  { /usr/bin/python3 -m venv "$motodir" && "$motodir/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"; } >/dev/null 2>&1 ||
    echo "ensure-deps: pip install moto[server]==$MOTO_VERSION into $motodir failed (the S3 tests are skipped without it)" >&2
fi
exit 0
