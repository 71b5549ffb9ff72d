/* Layer member path rules; see oci_path.h. */
#include "api/image-import/oci_path.h"

#include <errno.h>
#include <string.h>

#define WH ".wh."
#define WH_OPQ ".wh..wh..opq"

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

int oci_path_clean(const char *in, char *out, struct err *e)
{
	size_t o = 0, depth = 0;
	const char *p = in;

	if (strlen(in) > OCI_PATH_MAX)
		return err_set(e, EINVAL, "name longer than %d bytes", OCI_PATH_MAX);
	if (in[0] == '/')
		return err_set(e, EINVAL,
			       "absolute path (layer members are relative to the image root)");
	if (has_control(in))
		return err_set(e, EINVAL, "control character in the name");
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return err_set(e, EINVAL,
				       "'..' component (a member may not leave the image root)");
		if (n > OCI_NAME_MAX)
			return err_set(e, EINVAL, "component longer than %d bytes", OCI_NAME_MAX);
		if (n && !(n == 1 && p[0] == '.')) {
			if (++depth > OCI_DEPTH_MAX)
				return err_set(e, EINVAL, "deeper than %d directories",
					       OCI_DEPTH_MAX);
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	out[o] = '\0';
	return 0;
}

static const char *base_of(const char *clean)
{
	const char *s = strrchr(clean, '/');

	return s ? s + 1 : clean;
}

bool oci_is_whiteout_name(const char *clean)
{
	return strncmp(base_of(clean), WH, strlen(WH)) == 0;
}

int oci_whiteout(const char *clean, enum oci_whiteout *kind, char *target, struct err *e)
{
	const char *b = base_of(clean), *name = b + strlen(WH);
	size_t dirlen = (size_t)(b - clean);

	*kind = OCI_WH_NONE;
	if (strncmp(b, WH, strlen(WH)) != 0)
		return 0;
	/* the directory part, without its trailing '/' */
	memcpy(target, clean, dirlen ? dirlen - 1 : 0);
	target[dirlen ? dirlen - 1 : 0] = '\0';
	if (strcmp(b, WH_OPQ) == 0) {
		*kind = OCI_WH_OPAQUE;
		return 0;
	}
	if (strncmp(name, WH, strlen(WH)) == 0)
		return err_set(e, EINVAL,
			       "'%s' is reserved by the OCI image spec (.wh..wh. prefix)", b);
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return err_set(e, EINVAL, "whiteout of nothing ('%s')", b);
	if (dirlen)
		target[dirlen - 1] = '/';
	memcpy(target + dirlen, name, strlen(name) + 1);
	*kind = OCI_WH_FILE;
	return 0;
}

int oci_symlink_check(const char *member, const char *target, struct err *e)
{
	size_t depth = 0;
	const char *p;

	if (!*target)
		return err_set(e, EINVAL, "symlink with an empty target");
	if (strlen(target) > OCI_PATH_MAX)
		return err_set(e, EINVAL, "symlink target longer than %d bytes", OCI_PATH_MAX);
	if (has_control(target))
		return err_set(e, EINVAL, "control character in the symlink target");
	if (target[0] != '/') {
		/* start in member's directory: one level per component before the last */
		for (p = member; *p; p++)
			if (*p == '/')
				depth++;
	}
	for (p = target; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (depth == 0)
				return err_set(e, EINVAL,
					       "symlink to '%.200s' leaves the image root", target);
			depth--;
		} else if (n && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return 0;
}
