#!/usr/bin/env bash
# Checks that an install works on its own, wherever it ends up: installs a
# build into a staging folder (meson install --destdir), MOVES the installed
# prefix elsewhere, then, with LD_LIBRARY_PATH and SDPA_SHIPPED_PROFILE_DIR
# unset:
#  - the installed tools carry a relative rpath ($ORIGIN/...) and sdpa-info
#    runs; its shipped-profile folder is the moved <datadir>/sdpa/profiles,
#    found from the library's location, holding every installed profile file,
#    with the same matching-record count as the build tree's sdpa-info;
#  - examples/quickstart.c compiles and links with the README's pkg-config
#    line against the moved install (relocatable sdpa.pc), and runs;
#  - sdpa.pc requires none of OpenCL, vulkan, clblast (opened at run time).
# Run by .ci/run after the build; needs no root. Exit status non-zero on the
# first failed check.
#   bash scripts/install-check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build}
[ -f "$build/build.ninja" ] || { echo "install-check: $build is not a Meson build dir" >&2; exit 2; }
unset LD_LIBRARY_PATH SDPA_SHIPPED_PROFILE_DIR SDPA_BACKEND SDPA_DEVICE
export SDPA_LOG=error

tmp=$(mktemp -d /tmp/sdpa-install-check-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install-check: FAIL: $*" >&2; exit 1; }

read -r prefix libdir datadir bindir < <(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"], o["datadir"], o["bindir"])')
echo "install-check: meson install -C $build --destdir (prefix $prefix), then move it"
meson install -C "$build" --destdir "$tmp/stage" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "meson install"; }
moved="$tmp/elsewhere/sdpa"
mkdir -p "$(dirname "$moved")"
mv "$tmp/stage$prefix" "$moved"
rm -rf "$tmp/stage"
case $libdir in /*) fail "libdir $libdir is absolute: not relocatable";; esac

# Tools: relative rpath, and they run.
info="$moved/$bindir/sdpa-info"
runpath=$(readelf -d "$info" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
case $runpath in '$ORIGIN'*) ;; *) fail "sdpa-info's rpath is '$runpath', not relative to \$ORIGIN";; esac
"$info" >"$tmp/info.txt" || fail "installed sdpa-info exits $? (cannot find libsdpa?)"
"$info" --json >"$tmp/info.json" || fail "installed sdpa-info --json"
"$build/tools/sdpa-info" --json >"$tmp/build-info.json" || fail "build-tree sdpa-info --json"

# Shipped profiles: the moved folder, found from the library's location.
want="$moved/$datadir/sdpa/profiles"
files=$(find "$want" -maxdepth 1 -name '*.jsonl' | wc -l)
[ "$files" -ge 1 ] || fail "no profile installed in $want"
python3 - "$tmp/info.json" "$tmp/build-info.json" "$want" "$files" <<'EOF' || fail "sdpa-info's shipped_profiles"
import json, os, sys
inst = json.load(open(sys.argv[1]))["shipped_profiles"]
tree = json.load(open(sys.argv[2]))["shipped_profiles"]
want, files = sys.argv[3], int(sys.argv[4])
def check(ok, what):
    if not ok:
        sys.exit(f"install-check: {what}: installed {inst}, build tree {tree}")
check(os.path.realpath(inst["path"]) == os.path.realpath(want), f"folder is not {want}")
check(inst["found_by"] == "library location", "not found from the library's location")
check(inst["exists"] and inst["files"] == files, f"expected {files} files")
check(inst["records"] >= 1, "no records")
check(tree["found_by"] == "build tree", "the build tree's sdpa-info does not use data/profiles")
check((inst["records"], inst["matching"], inst["stale"]) ==
      (tree["records"], tree["matching"], tree["stale"]),
      "installed and build-tree counts differ")
print(f"install-check: shipped profiles {inst['path']}: {inst['files']} files, "
      f"{inst['records']} records, {inst['matching']} matching this machine's devices")
EOF
grep -q "^shipped profiles: .*(library location), $files files" "$tmp/info.txt" ||
  fail "sdpa-info's text does not show the shipped profiles: $(grep shipped "$tmp/info.txt")"

# A program built with the README's line against the moved install.
export PKG_CONFIG_PATH="$moved/$libdir/pkgconfig"
# libsdpa opens the GPU libraries at run time: sdpa.pc must not require them.
reqs=$(pkg-config --print-requires --print-requires-private sdpa)
! grep -qiE '^(OpenCL|vulkan|clblast)\b' <<<"$reqs" || fail "sdpa.pc requires: $(echo $reqs)"
cd "$tmp"
cc "$src/examples/quickstart.c" -o quickstart $(pkg-config --cflags --libs sdpa) -lm \
  -Wl,-rpath,"$(pkg-config --variable=libdir sdpa)" || fail "quickstart does not build with pkg-config"
./quickstart >quickstart.txt || { cat quickstart.txt; fail "quickstart built against the install exits $?"; }
grep -q "$moved" <(ldd ./quickstart) || fail "quickstart does not load libsdpa from the moved install"
echo "install-check: ok (installed, moved to $moved, tools and a pkg-config build run)"
