/*
 * kiln/common.h: what every libkiln header shares.
 *
 * Conventions of the whole API:
 *  - Objects are opaque handles (kiln_vm_config, kiln_vm, kiln_agent,
 *    kiln_proc) made by a *_new/create function and released by the
 *    matching *_free/destroy, which accepts NULL.
 *  - A function that can fail returns 0 or a negative errno. The message
 *    for the user (one line: what failed and what to do) is kept in the
 *    handle the call was made on and read with <object>_errmsg().
 *  - Nothing in libkiln prints, exits, or changes process-wide state
 *    (signal dispositions, limits, umask, cwd) unless a function whose
 *    name says so is called (kiln_kick_signal_install).
 *  - Thread safety is stated per function.
 *  - Memory libkiln returns to the caller is released with kiln_free().
 */
#ifndef KILN_PUBLIC_COMMON_H
#define KILN_PUBLIC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && defined(KILN_BUILDING_LIBRARY)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
#define KILN_BEGIN_DECLS extern "C" {
#define KILN_END_DECLS }
#else
#define KILN_BEGIN_DECLS
#define KILN_END_DECLS
#endif

KILN_BEGIN_DECLS

/*
 * Release memory libkiln allocated for the caller (exec output, a file
 * read, firewall JSON). NULL is fine. Any thread.
 */
KILN_API void kiln_free(void *p);

KILN_END_DECLS

#endif
