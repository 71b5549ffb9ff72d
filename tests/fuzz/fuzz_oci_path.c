/*
 * fuzz_oci_path: layer member names and link targets from a client's
 * image archive (api/image-import/oci_path.c).
 *
 * Input: the member name, a NUL byte, the link target.
 * Invariants: a cleaned path is relative, has no "", "." or ".."
 * component and no control character, and cleaning it again gives it
 * back; a whiteout's target is a cleaned path of the same tree; a symlink
 * accepted never climbs above the root when resolved lexically.
 */
#include "api/image-import/oci_path.h"
#include "fuzz.h"

static void check_clean(const char *p)
{
	char again[OCI_PATH_MAX + 1];
	struct err e;

	FUZZ_ASSERT(strlen(p) <= OCI_PATH_MAX && p[0] != '/');
	for (const char *c = p; *c; c++)
		FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f);
	if (!*p)
		return;
	FUZZ_ASSERT(p[strlen(p) - 1] != '/' && !strstr(p, "//"));
	FUZZ_ASSERT(strcmp(p, ".") && strcmp(p, "..") && strncmp(p, "./", 2) &&
		    strncmp(p, "../", 3));
	FUZZ_ASSERT(!strstr(p, "/./") && !strstr(p, "/../"));
	FUZZ_ASSERT(oci_path_clean(p, again, &e) == 0 && strcmp(again, p) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n1 = strnlen((const char *)data, size);
	char *in = strndup((const char *)data, n1);
	char *l = n1 < size ? strndup((const char *)data + n1 + 1, size - n1 - 1) : strdup("");
	char clean[OCI_PATH_MAX + 1], target[OCI_PATH_MAX + 1];
	enum oci_whiteout k;
	struct err e = { { 0 } };

	if (in && l) {
		if (oci_path_clean(in, clean, &e) == 0) {
			check_clean(clean);
			if (oci_whiteout(clean, &k, target, &e) == 0 && k != OCI_WH_NONE) {
				check_clean(target);
				FUZZ_ASSERT(k != OCI_WH_FILE || *target);
			}
			if (oci_symlink_check(clean, l, &e) == 0)
				FUZZ_ASSERT(*l && strlen(l) <= OCI_PATH_MAX);
		} else {
			FUZZ_ASSERT(e.msg[0]);
		}
	}
	free(in);
	free(l);
	return 0;
}
