/* Room for an image import; see import_room.h. */
#include "api/kilnd/images/import_room.h"

int import_room_check(const char *what, const char *holds, uint64_t archive_bytes,
		      uint64_t free_bytes, const char *dir, struct api_err *e)
{
	uint64_t need;

	if (archive_bytes > (UINT64_MAX - IMPORT_ROOM_SLACK) / IMPORT_ROOM_FACTOR)
		need = UINT64_MAX;
	else
		need = archive_bytes * IMPORT_ROOM_FACTOR + IMPORT_ROOM_SLACK;
	if (free_bytes >= need)
		return 0;
	api_err_set(e, API_E_NO_SPACE,
		    "%s: an archive of %llu MiB needs about %llu MiB free in %s (%s), and %llu MiB are: free some space first",
		    what, (unsigned long long)(archive_bytes >> 20),
		    (unsigned long long)(need >> 20), dir, holds,
		    (unsigned long long)(free_bytes >> 20));
	return -1;
}
