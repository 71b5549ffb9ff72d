/*
 * kiln/version.h: the version of libkiln a program was compiled against
 * and of the one it runs with. The soname is libkiln.so.<KILN_ABI_VERSION>;
 * it changes only when a public function is removed or changes meaning.
 */
#ifndef KILN_PUBLIC_VERSION_H
#define KILN_PUBLIC_VERSION_H

#include "common.h"

#define KILN_VERSION_STRING "0.1.0"
#define KILN_ABI_VERSION 1

KILN_BEGIN_DECLS

/*
 * The running library's version, "MAJOR.MINOR.PATCH" (also the version a
 * snapshot records: a snapshot is restored only by the version that took
 * it). Static storage. Any thread.
 */
KILN_API const char *kiln_version(void);

KILN_END_DECLS

#endif
