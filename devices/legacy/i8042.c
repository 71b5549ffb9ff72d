#include "devices/legacy/i8042.h"

#include <string.h>

#define CMD_PULSE_RESET 0xfe

void i8042_cmd_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	struct i8042 *k = opaque;

	(void)off;
	if (!is_write) {
		memset(data, 0, size); /* output empty, input empty: never busy */
		return;
	}
	if (data[0] == CMD_PULSE_RESET && k->reset)
		k->reset(k->ctx);
}

void i8042_data_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	(void)opaque;
	(void)off;
	if (!is_write)
		memset(data, 0, size);
}
