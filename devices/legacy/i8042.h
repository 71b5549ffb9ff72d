/*
 * i8042: just enough of the PC keyboard controller for the guest to reset
 * the machine (Linux `reboot=k`: command 0xFE on port 0x64). There is no
 * keyboard; the status register always reads "buffers empty" so the
 * kernel's wait loops end at once.
 */
#ifndef KILN_I8042_H
#define KILN_I8042_H

#include <stdint.h>

#define I8042_DATA_PORT 0x60
#define I8042_CMD_PORT 0x64

struct i8042 {
	void (*reset)(void *ctx);
	void *ctx;
};

/* Handler for port 0x64 (register it with length 1). */
void i8042_cmd_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);
/* Handler for port 0x60: reads 0, writes ignored. */
void i8042_data_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);

#endif
