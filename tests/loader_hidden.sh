#!/usr/bin/env bash
# loader_hidden.sh — a program linking libsdpa starts and runs on the CPU
# backend on a machine without the OpenCL ICD loader, the Vulkan loader or
# CLBlast, and asking for a missing one names the library.
#
# The libraries are hidden without touching the system: the script re-runs
# itself in a private user + mount namespace (`unshare -rm`) and bind-mounts
# an empty file over every copy of libOpenCL.so.1, libvulkan.so.1 and
# libclblast.so.1 the dynamic loader could find (ldconfig's cache and the
# system folders), so dlopen fails with "file too short" for that process
# tree only. (Running through ld.so --inhibit-cache --library-path does not
# hide them: ld.so still searches the system folders.) Where the kernel
# refuses unprivileged namespaces the test is skipped (exit 77), saying so.
#
# Checks, first with only CLBlast hidden (when the build has CLBlast and
# OpenCL lists a device):
#  - sdpa-check --backend opencl --unfused --allow-unsupported: the case is UNSUPPORTED with a
#    message naming libclblast.so.1;
# then with all three hidden:
#  - a dlopen of each from Python fails (the hiding works);
#  - quickstart (AUTO) exits 0 on the cpu backend;
#  - sdpa-info --json: AUTO lands on cpu, OpenCL and Vulkan list no device,
#    and AUTO's log names libOpenCL.so.1 and libvulkan.so.1;
#  - quickstart with SDPA_BACKEND=opencl / vulkan fails, naming the library.
# Run by meson test (suite loader):
#   loader_hidden.sh QUICKSTART SDPA_INFO SDPA_CHECK CASE_DIR HAVE_CLBLAST(0|1)
set -euo pipefail
if [ "${1:-}" != --inside ]; then
  probe=$(mktemp -d)
  : >"$probe/a"; : >"$probe/b"
  if ! unshare -rm mount --bind "$probe/a" "$probe/b" 2>/dev/null; then
    rm -rf "$probe"
    echo "loader_hidden: SKIP: unshare -rm + mount --bind (user + mount namespaces) is not permitted here"
    exit 77
  fi
  rm -rf "$probe"
  exec unshare -rm bash "$0" --inside "$@"
fi
shift
quickstart=$1 info=$2 check=$3 case_dir=$4 has_clblast=$5
unset LD_LIBRARY_PATH LD_PRELOAD SDPA_BACKEND SDPA_DEVICE
export SDPA_LOG=error
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "loader_hidden: FAIL: $*" >&2; exit 1; }
: >"$tmp/empty"

# Every file the dynamic loader could open for soname $1.
copies() {
  local arch
  arch=$(gcc -print-multiarch 2>/dev/null || true)
  { ldconfig -p 2>/dev/null | awk -v so="$1" '$1 == so { print $NF }'
    for d in /lib/$arch /usr/lib/$arch /lib64 /usr/lib64 /lib /usr/lib /usr/local/lib; do
      [ -e "$d/$1" ] && echo "$d/$1"
    done; } | while read -r p; do readlink -f "$p"; done | sort -u
}
hide() {
  for p in $(copies "$1"); do
    mount --bind "$tmp/empty" "$p" || fail "cannot bind-mount over $p"
    echo "loader_hidden: hid $p ($1)"
  done
  python3 -c "import ctypes, sys
try:
    ctypes.CDLL('$1')
except OSError as e:
    sys.exit(0)
sys.exit(1)" || fail "$1 still loads after hiding it"
}

# Sanitizer runs preload lavapipe (SDPA_SAN_PRELOAD, .ci/sanitizer-env.sh)
# so that LeakSanitizer can name its leaks; the run with the libraries
# present keeps it (the runs below hide libvulkan: no driver is loaded).
rc=0; env ${SDPA_SAN_PRELOAD:+LD_PRELOAD=$SDPA_SAN_PRELOAD} "$info" --json >"$tmp/before.json" || rc=$?
[ $rc = 0 ] || fail "sdpa-info --json exits $rc with the libraries present"
read -r has_cl has_vk cl_devs < <(python3 - "$tmp/before.json" <<'PY'
import json, sys
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["backends"]}
cl, vk = b.get("opencl", {}), b.get("vulkan", {})
print(int(bool(cl.get("compiled"))), int(bool(vk.get("compiled"))), len(cl.get("devices", [])))
PY
)

hide libclblast.so.1
if [ "$has_clblast" = 1 ] && [ "$has_cl" = 1 ] && [ "$cl_devs" -gt 0 ]; then
  rc=0; "$check" --backend opencl --unfused --allow-unsupported "$case_dir" >"$tmp/check.txt" 2>&1 || rc=$?
  [ $rc = 0 ] ||
    { cat "$tmp/check.txt"; fail "sdpa-check --unfused without CLBlast exits $rc (want UNSUPPORTED, exit 0)"; }
  grep -q "^UNSUPPORTED .*cannot load libclblast.so.1" "$tmp/check.txt" ||
    { cat "$tmp/check.txt"; fail "the unfused path without CLBlast is not refused naming libclblast.so.1"; }
  echo "loader_hidden: without CLBlast, tile.unfused is refused naming libclblast.so.1"
else
  echo "loader_hidden: no CLBlast in this build or no OpenCL device: the CLBlast check is not run"
fi

hide libOpenCL.so.1
hide libvulkan.so.1

rc=0; "$quickstart" >"$tmp/qs.txt" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$tmp/qs.txt"; fail "quickstart exits $rc without the GPU libraries"; }
grep -q "^backend cpu " "$tmp/qs.txt" || { cat "$tmp/qs.txt"; fail "quickstart did not run on the cpu backend"; }
echo "loader_hidden: quickstart runs on the cpu backend"

rc=0; "$info" --json >"$tmp/after.json" || rc=$?
[ $rc = 0 ] || fail "sdpa-info --json exits $rc without the GPU libraries"
python3 - "$tmp/after.json" "$has_cl" "$has_vk" <<'PY' || fail "sdpa-info without the GPU libraries"
import json, sys
d = json.load(open(sys.argv[1]))
has = {"opencl": sys.argv[2] == "1", "vulkan": sys.argv[3] == "1"}
lib = {"opencl": "libOpenCL.so.1", "vulkan": "libvulkan.so.1"}
a = d["auto"]
def check(ok, what):
    if not ok:
        sys.exit(f"loader_hidden: {what}: auto = {a}")
check(a["status"] == "SDPA_OK" and a["backend"] == "cpu", "AUTO is not on the cpu backend")
for b in d["backends"]:
    if b["name"] in has and has[b["name"]]:
        check(not b.get("devices"), f"{b['name']} still lists devices")
        check(any("cannot load " + lib[b["name"]] in l for l in a["log"]),
              f"AUTO's log does not name {lib[b['name']]}")
print("loader_hidden: sdpa-info: AUTO on cpu, no OpenCL/Vulkan device, log names the libraries")
PY

for kind in opencl vulkan; do
  [ "$kind" = opencl ] && { [ "$has_cl" = 1 ] || continue; so=libOpenCL.so.1; }
  [ "$kind" = vulkan ] && { [ "$has_vk" = 1 ] || continue; so=libvulkan.so.1; }
  if SDPA_BACKEND=$kind "$quickstart" >"$tmp/qs-$kind.txt" 2>&1; then
    cat "$tmp/qs-$kind.txt"; fail "SDPA_BACKEND=$kind quickstart succeeds without $so"
  fi
  grep -q "$kind: cannot load $so" "$tmp/qs-$kind.txt" ||
    { cat "$tmp/qs-$kind.txt"; fail "SDPA_BACKEND=$kind: the error does not name $so"; }
  echo "loader_hidden: SDPA_BACKEND=$kind fails naming $so"
done
echo "loader_hidden: ok"
