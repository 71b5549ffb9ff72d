/*
 * cgroup_file: one cgroup v2 interface file of a directory, read or
 * written whole (lib/cgroup's other files, and kilnd's and kiln-runtime's
 * cgroups through them).
 *
 * Contract: a value is written in one write(2) (the kernel takes one
 * value per write); what is read is one NUL-terminated text with its
 * trailing newlines cut. 0 or -errno; nothing here keeps state.
 */
#ifndef KILN_CGROUP_FILE_H
#define KILN_CGROUP_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* dir/name's contents (at most cap - 1 bytes) into out. 0 or -errno. */
int cgroup_file_read(const char *dir, const char *name, char *out, size_t cap);

/* value into dir/name in one write. 0 or -errno (-EIO: written short). */
int cgroup_file_write(const char *dir, const char *name, const char *value);

/* Whether path lies on a cgroup2 file system. */
bool cgroup_file_is_v2(const char *path);

#endif
