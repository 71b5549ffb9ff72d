// A download into a Writable with bounded memory: node:net with one
// reused 128 KiB read buffer (the socket's `onread`), kilnd's answer framed
// here (Content-Length, chunked, or until close), and the socket paused
// until the destination has taken each slice. node:http allocates a new
// Buffer per read, which the garbage collector frees late: a 100 MiB
// download through it grows RSS by 30-40 MiB.
import net from 'node:net';
import { queryString } from './transport.js';
import { KilnError, KilnProtocolError } from './errors.js';

const READ_BUF = 128 * 1024;
const MAX_HEAD = 64 * 1024;
const MAX_LINE = 1024;
const MAX_ERROR_BODY = 1024 * 1024;

/**
 * GET path?query into out (a Writable). With copy false, slices of the
 * read buffer are handed to out.write as they are, and the socket waits
 * for every write's callback before the buffer is read into again: only
 * for a destination that is done with a chunk when it calls back (a file
 * stream). Resolves with the bytes written.
 */
export function downloadTo(transport, path, query, out, { copy = true, idleTimeoutMs = transport.timeoutMs, errorFromBody } = {}) {
  const what = `GET ${path}`;
  const state = { gotHead: false, timedOut: false, deadlineMs: transport.timeoutMs };
  return new Promise((resolve, reject) => {
    let settled = false;
    let total = 0;
    let phase = 'head';
    let head = Buffer.alloc(0);
    let remaining = 0;
    let line = '';
    let status = 0;
    let errParts = null;
    let errLen = 0;
    let pending = 0;
    let paused = false;
    let timer = null;

    const finish = (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(transport.convert(err, state, what));
      else resolve(total);
    };
    const complete = () => {
      if (errParts) {
        finish(errorFromBody(status, Buffer.concat(errParts), what));
      } else if (pending === 0) {
        finish(null);
      }
    };
    const protocol = (msg) => { throw new KilnProtocolError(`${what}: ${msg} in kilnd's answer`, { code: 'protocol_error' }); };

    const emit = (view) => {
      if (view.length === 0) return;
      if (errParts) {
        errLen += view.length;
        if (errLen <= MAX_ERROR_BODY) errParts.push(Buffer.from(view));
        return;
      }
      pending++;
      total += view.length;
      out.write(copy ? Buffer.from(view) : view, (err) => {
        pending--;
        if (err) { finish(new KilnError(`${what}: writing the download failed: ${err.message}`, { code: 'download_sink' })); return; }
        if (pending === 0) {
          if (phase === 'done') { complete(); return; }
          if (paused) { paused = false; sock.resume(); }
        }
      });
    };

    const parseHead = (text) => {
      const lines = text.split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]);
      if (!m) protocol('not an HTTP/1.1 status line');
      status = Number(m[1]);
      const h = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i <= 0) protocol('a malformed header line');
        const name = l.slice(0, i).toLowerCase();
        if (name in h && (name === 'content-length' || name === 'transfer-encoding')) protocol(`a repeated ${name}`);
        h[name] = l.slice(i + 1).trim();
      }
      if (status >= 100 && status < 200) protocol(`an unexpected ${status}`);
      state.gotHead = true;
      clearTimeout(timer);
      if (idleTimeoutMs) {
        sock.setTimeout(idleTimeoutMs, () => {
          state.timedOut = true;
          state.deadlineMs = idleTimeoutMs;
          finish(new Error('idle'));
        });
      }
      if (status >= 400) errParts = [];
      if (status === 204 || status === 304) { phase = 'done'; return; }
      const te = h['transfer-encoding'];
      const cl = h['content-length'];
      if (te !== undefined) {
        if (te.toLowerCase() !== 'chunked' || cl !== undefined) protocol(`Transfer-Encoding ${JSON.stringify(te)}`);
        phase = 'size';
      } else if (cl !== undefined) {
        if (!/^\d{1,15}$/.test(cl)) protocol(`Content-Length ${JSON.stringify(cl)}`);
        remaining = Number(cl);
        phase = remaining ? 'length' : 'done';
      } else {
        phase = 'eof';
      }
    };

    // Frames data (a view of the read buffer, or a copy for the head's rest).
    const feed = (data) => {
      let at = 0;
      while (at < data.length && phase !== 'done') {
        switch (phase) {
          case 'head': {
            const all = Buffer.concat([head, data.subarray(at)]);
            const end = all.indexOf('\r\n\r\n');
            if (end < 0) {
              if (all.length > MAX_HEAD) protocol(`a head over ${MAX_HEAD} bytes`);
              head = all;
              return;
            }
            head = null;
            parseHead(all.subarray(0, end).toString('latin1'));
            feed(all.subarray(end + 4)); // a copy: safe to hand on
            return;
          }
          case 'length': {
            const take = Math.min(remaining, data.length - at);
            emit(data.subarray(at, at + take));
            at += take;
            remaining -= take;
            if (remaining === 0) phase = 'done';
            break;
          }
          case 'eof':
            emit(data.subarray(at));
            at = data.length;
            break;
          case 'size':
          case 'crlf':
          case 'trailer': {
            const nl = data.indexOf(10, at);
            const stop = nl < 0 ? data.length : nl + 1;
            line += data.subarray(at, stop).toString('latin1');
            at = stop;
            if (line.length > MAX_LINE) protocol('a chunk line too long');
            if (nl < 0) break;
            if (!line.endsWith('\r\n')) protocol('a bare LF');
            const l = line.slice(0, -2);
            line = '';
            if (phase === 'crlf') {
              if (l !== '') protocol("a chunk's data longer than its size");
              phase = 'size';
            } else if (phase === 'size') {
              const hex = l.split(';')[0].trim();
              if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) protocol(`a chunk size ${JSON.stringify(l.slice(0, 40))}`);
              remaining = parseInt(hex, 16);
              phase = remaining ? 'data' : 'trailer';
            } else if (l === '') {
              phase = 'done';
            }
            break;
          }
          case 'data': {
            const take = Math.min(remaining, data.length - at);
            emit(data.subarray(at, at + take));
            at += take;
            remaining -= take;
            if (remaining === 0) phase = 'crlf';
            break;
          }
          default:
            return;
        }
      }
    };

    const onRead = (n, buf) => {
      if (settled) return false;
      try {
        feed(buf.subarray(0, n));
      } catch (e) {
        finish(e);
        return false;
      }
      if (phase === 'done') { complete(); return false; }
      if (pending > 0) { paused = true; return false; }
      return true;
    };

    const sock = net.connect({ path: transport.socket, onread: { buffer: Buffer.allocUnsafe(READ_BUF), callback: onRead } });
    sock.on('connect', () => {
      sock.write(`GET ${path}${queryString(query)} HTTP/1.1\r\nHost: kiln\r\nAccept: */*\r\nConnection: close\r\n\r\n`);
    });
    sock.on('error', (e) => finish(e));
    const ended = () => {
      if (settled) return;
      if (phase === 'eof') { phase = 'done'; complete(); return; }
      if (phase !== 'done') finish(new Error(phase === 'head' ? 'closed before answering' : 'the answer ended before its end'));
    };
    sock.on('end', ended);
    sock.on('close', ended);
    if (transport.timeoutMs) {
      timer = setTimeout(() => { state.timedOut = true; finish(new Error('deadline')); }, transport.timeoutMs);
    }
  });
}
