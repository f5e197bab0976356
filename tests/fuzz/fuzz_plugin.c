/*
 * fuzz_plugin.c -- libFuzzer target: one hook or tool of the real plugin
 * from raw JSON (event+ctx, or params+ctx), on a fresh instance per input
 * (fuzz_host.h has the input format and the invariants checked).
 *
 * Built once per hook and tool by the Makefile with
 *   -DFZ_KIND="'h'" -DFZ_NAME="\"message_received\""   (a hook)
 *   -DFZ_KIND="'t'" -DFZ_NAME="\"discuss-callback\""   (a tool)
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_host.h"

#ifndef FZ_KIND
#error "FZ_KIND ('h' or 't') and FZ_NAME (hook or tool name) are set by the Makefile"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run_input(FZ_KIND, FZ_NAME, data, size);
    return 0;
}
