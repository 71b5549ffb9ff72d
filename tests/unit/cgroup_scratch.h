/*
 * cgroup_scratch: a test's own cgroup v2 subtree, <this process's cgroup>/
 * kiln-cgtest-<pid>-<tag>, for the tests of lib/cgroup that need the real
 * file system. cgroup_scratch_path gives it (not made), or skips the test
 * with a message when this process has no cgroup2 or is not root.
 */
#ifndef KILN_TEST_CGROUP_SCRATCH_H
#define KILN_TEST_CGROUP_SCRATCH_H

#include <stdio.h>
#include <unistd.h>

#include "lib/base/cgroup_self.h"

/* Tests call it first; it skips (cmocka's skip) when there is no place. */
#define cgroup_scratch_path(out, cap, tag)                                                       \
	do {                                                                                     \
		char own_[1024];                                                                 \
		if (geteuid() != 0 || cgroup_self_dir(own_, sizeof(own_)) < 0 ||                 \
		    access(own_, W_OK) < 0) {                                                    \
			print_message("cgroup: skipped: needs root and a writable cgroup v2\n"); \
			skip();                                                                  \
		}                                                                                \
		snprintf(out, cap, "%s/kiln-cgtest-%d-%s", own_, (int)getpid(), tag);            \
	} while (0)

#endif
