# sanitizer-env.sh — the sanitizer runtime settings of .ci/run's ASan + UBSan
# step and of scripts/hardening.sh (sourced by both: one definition).
#
# LeakSanitizer reads the reviewed driver suppressions in lsan.supp (beside
# this file; libsdpa's own frames are never listed).
#
# SDPA_SAN_PRELOAD: Mesa's lavapipe, for LD_PRELOAD into the test processes
# (scripts/test.sh's meson test wrapper, hardening.sh's fault walk). The
# Vulkan loader unloads its drivers at vkDestroyInstance, and on an AMD
# host (2026-12-02; no Intel host before) lavapipe left 128-byte blocks from
# a once-per-load initialisation (pthread_once) on every load. With the
# driver gone by exit, LeakSanitizer's stack is realloc and "<unknown
# module>" (no frame pointers in the driver), which no suppression can name:
# every suite that creates a Vulkan instance failed that way.
# Preloaded, the driver stays mapped, so the leak is reported inside
# libvulkan_lvp and lsan.supp's entry covers it. The full-stack unwinder
# (fast_unwind_on_malloc=0) also works but made the step 2-4x slower.
# use_sigaltstack=0: on the same host, worker threads that had compiled
# device kernels exited with a heap-allocated alternate signal stack in
# place (not ASan's: none of libsdpa's code calls sigaltstack; the drivers'
# LLVM does), which ASan then tried to unmap as its own and aborted
# ("failed to deallocate", test_threads). Without its own alternate stack
# ASan reports a stack overflow less clearly; nothing else changes.
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime (Debian's) takes a
# dynamic TLS block whose address is 16 bytes past a 4 KiB boundary for one
# with a pre-2.25 glibc header and reads the two words before it as a range;
# where a malloc'd block lands there by chance, LeakSanitizer's tracer
# crashes at exit ("Tracer caught signal 11", before any report). It did so
# in CI in test_shipped (2026-12-02) and here without the preload, every
# time. Without the interceptor LeakSanitizer does not scan the threads'
# dynamic TLS blocks, so a block reachable only from one would be reported;
# none is, in any suite or in the fault walk.
# verify_asan_link_order=0 lets the preloaded driver come before the ASan
# runtime in the library list (ASan still initialises first, from the
# executable's preinit array). halt_on_error, abort_on_error and
# print_summary are meson test's own defaults, which setting ASAN_OPTIONS
# replaces.
sanitizer_env_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LSAN_OPTIONS="suppressions=$sanitizer_env_dir/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_summary=1:verify_asan_link_order=0:use_sigaltstack=0:intercept_tls_get_addr=0"
SDPA_SAN_PRELOAD=$(ls /usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -n 1)
export SDPA_SAN_PRELOAD
unset sanitizer_env_dir
