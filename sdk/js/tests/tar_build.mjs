// Tar archives built byte by byte for the extractor's tests: any name,
// type, size field or checksum a hostile guest could send, which no tar
// program would write.
import zlib from 'node:zlib';

const enc = (s) => (Buffer.isBuffer(s) ? s : Buffer.from(s));

function octal(n, width) {
  return Buffer.from(n.toString(8).padStart(width - 1, '0') + '\0');
}

/**
 * One ustar header block. opts: type ('0'), size (0), mode (0o644), link,
 * mtime, prefix, magic ('ustar\0' + '00'), sizeField (raw 12 bytes, any
 * value), checksum (a number to store instead of the right one).
 */
export function header(name, opts = {}) {
  const h = Buffer.alloc(512);
  enc(name).copy(h, 0, 0, 100);
  octal(opts.mode ?? 0o644, 8).copy(h, 100);
  octal(0, 8).copy(h, 108);
  octal(0, 8).copy(h, 116);
  if (opts.sizeField) enc(opts.sizeField).copy(h, 124, 0, 12);
  else octal(opts.size ?? 0, 12).copy(h, 124);
  octal(opts.mtime ?? 1700000000, 12).copy(h, 136);
  h.write(opts.type ?? '0', 156, 'latin1');
  if (opts.link !== undefined) enc(opts.link).copy(h, 157, 0, 100);
  h.write(opts.magic ?? 'ustar\x0000', 257, 'latin1');
  if (opts.prefix) enc(opts.prefix).copy(h, 345, 0, 155);
  h.fill(' ', 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  octal(opts.checksum ?? sum, 7).copy(h, 148);
  h[155] = 0x20;
  return h;
}

function padded(data) {
  const d = enc(data);
  return Buffer.concat([d, Buffer.alloc((512 - (d.length % 512)) % 512)]);
}

/** A regular file: header and data. */
export const file = (name, data = '', opts = {}) => Buffer.concat([header(name, { ...opts, size: enc(data).length }), padded(data)]);
export const dir = (name, opts = {}) => header(name, { mode: 0o755, ...opts, type: '5' });
export const symlink = (name, link, opts = {}) => header(name, { ...opts, type: '2', link });
export const hardlink = (name, link, opts = {}) => header(name, { ...opts, type: '1', link });

/** A GNU long name ('L') or long link ('K') record for the next member. */
export function gnuLong(value, type = 'L') {
  const d = Buffer.concat([enc(value), Buffer.from([0])]);
  return Buffer.concat([header('././@LongLink', { type, size: d.length }), padded(d)]);
}

/** A pax 'x' (or 'g') header with records {key: value}. */
export function pax(records, type = 'x') {
  const parts = [];
  for (const [k, v] of Object.entries(records)) {
    const body = Buffer.concat([Buffer.from(` ${k}=`), enc(v), Buffer.from('\n')]);
    let len = body.length + 1;
    while (String(len).length + body.length !== len) len = String(len).length + body.length;
    parts.push(Buffer.from(String(len)), body);
  }
  const d = Buffer.concat(parts);
  return Buffer.concat([header('PaxHeaders/x', { type, size: d.length }), padded(d)]);
}

export const END = Buffer.alloc(1024);

/** The members (Buffers) and the end blocks, gzipped as kilnd sends them. */
export const tgz = (...members) => zlib.gzipSync(Buffer.concat([...members, END]));
/** The same without the end blocks (a cut archive, or one to finish by hand). */
export const tgzRaw = (...parts) => zlib.gzipSync(Buffer.concat(parts));
