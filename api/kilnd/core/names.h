/*
 * names: the syntax of every name and path a client may hand kilnd that
 * ends up in a file name, a kiln-vmm option or the guest's kernel command
 * line (docs/api.md gives the same rules).
 *
 * Contract: pure predicates and formatting, no I/O, no global state. The
 * rules are deliberately narrow: a hostname or guest path goes onto the
 * kernel command line, where a space or quote would inject parameters; a
 * host path goes into kiln-vmm's "PATH,opt=..." and "DIR:TAG" options,
 * where ',' and ':' are separators.
 */
#ifndef KILN_NAMES_H
#define KILN_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sandbox ids: 12 lowercase hex digits (48 random bits). */
#define SANDBOX_ID_LEN 12
#define SANDBOX_ID_RANDOM_BYTES 6

#define IMAGE_NAME_MAX 64
#define IMAGE_REF_MAX 255 /* a tag of an OCI layout (org.opencontainers.image.ref.name) */
#define HOSTNAME_MAX 64   /* HOST_NAME_MAX, and the agent's limit */
#define LABEL_KEY_MAX 63

/* Format 6 random bytes as an id into out (SANDBOX_ID_LEN + 1 bytes). */
void sandbox_id_format(const uint8_t rnd[SANDBOX_ID_RANDOM_BYTES], char *out);
/* True for exactly SANDBOX_ID_LEN lowercase hex digits. */
bool sandbox_id_valid(const char *s);

/* 1..64 bytes of [A-Za-z0-9._-], first a letter or digit (also a file name). */
bool image_name_valid(const char *s);
/* A tag to import from an OCI layout: 1..255 bytes of [A-Za-z0-9._:@/+-],
 * first a letter or digit (image-spec annotations.md's ref.name grammar,
 * loosely; also a safe argv word). */
bool image_ref_valid(const char *s);

/* RFC 1123: dot-separated labels of [A-Za-z0-9-], 1..63 bytes, no '-' at
 * either end of a label; 1..64 bytes in all. */
bool hostname_valid(const char *s);
/* The same rule for a name of at most max bytes; with lower_only, no
 * uppercase letter (a name compared case-insensitively, kept canonical). */
bool dns_name_valid(const char *s, size_t max, bool lower_only);

/* 1..63 bytes of [A-Za-z0-9._/-], first a letter or digit. */
bool label_key_valid(const char *s);

/* Absolute, 2..max bytes of [A-Za-z0-9._/+-], not "/" itself, no "."
 * or ".." component: a share's mount point on the kernel command line. */
bool guest_mount_path_valid(const char *s, size_t max);

/* Absolute, 1..max bytes (NULs cannot occur in a C string): a guest path
 * the agent resolves (exec cwd, file paths). */
bool guest_path_valid(const char *s, size_t max);

/*
 * A host path kilnd hands kiln-vmm: absolute, without control characters
 * (a snapshot's DIR is the rest of a control socket line). ',' and ':'
 * are fine: kiln-vmm takes each path as a whole option value.
 */
bool host_path_valid(const char *s);

#endif
