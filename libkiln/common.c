/*
 * common: what every part of libkiln shares (include/kiln/common.h): the
 * one way to release memory it returned. A file of its own, so that a
 * user of the agent API alone (kilnd) links no VM.
 */
#include <stdlib.h>

#include <kiln/common.h>

void kiln_free(void *p)
{
	free(p);
}
