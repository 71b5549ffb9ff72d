/* Strict JSON reading (json_strict.h). */
#include "lib/base/json_strict.h"

json_t *json_strict_loadb(const char *buf, size_t len, json_error_t *je)
{
	return json_loadb(buf, len, JSON_REJECT_DUPLICATES, je);
}

json_t *json_strict_loads(const char *s, json_error_t *je)
{
	return json_loads(s, JSON_REJECT_DUPLICATES, je);
}

json_t *json_strict_load_file(const char *path, json_error_t *je)
{
	return json_load_file(path, JSON_REJECT_DUPLICATES, je);
}
