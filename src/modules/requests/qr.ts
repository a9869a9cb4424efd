import { constants, crc32, deflateSync } from 'node:zlib';
import encodeQR from 'qr';

// The QR matrix comes from the `qr` library (one byte segment, error correction M, a fixed mask:
// the search over all eight masks is skipped, and the code is still valid). It draws a matrix in
// 14–16 µs where the `qrcode` library took 30–34 µs, the same modules bit for bit
// (src/modules/requests/qr.test.ts). Rendering a PNG through an image library took ~3 ms a code,
// which capped request creation near 300/s; the image here is written as a 1-bit greyscale PNG
// straight from the matrix (~10x faster, a quarter of the bytes).
// Every buffer here is small enough to come from Node's shared pool: a zero-filled Buffer.alloc
// or a 16 kB zlib output chunk is an ArrayBuffer of its own, and making thousands a second pushed
// V8 into a full collection every second or so (from 7 to 2 in 22,000 codes).

const SCALE = 4;
/** The compressed image is a few hundred bytes: output chunks this small come from Node's shared buffer pool. */
const DEFLATE_CHUNK = 1024;
/**
 * zlib's filtered strategy (favouring literals and short matches, as PNG rows want) with an 8 kB
 * hash table: for a payment URL's code 249 bytes in 21–23 µs, against 294 bytes in 23–26 µs with
 * the default strategy and a 2 kB table (docs/performance.md, "The QR image's compression").
 */
const DEFLATE_OPTIONS = {
  level: 6,
  strategy: constants.Z_FILTERED,
  windowBits: 10,
  memLevel: 4,
  chunkSize: DEFLATE_CHUNK,
};
const MARGIN = 2;
const FILTER_NONE = 0;
const FILTER_UP = 2;

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.allocUnsafe(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const IEND = chunk('IEND', Buffer.alloc(0));

/** The QR code of `text` as rows of modules (true is black), in a white margin of MARGIN modules. */
export function qrMatrix(text: string): boolean[][] {
  return encodeQR(text, 'raw', { ecc: 'medium', encoding: 'byte', mask: 2, border: MARGIN });
}

/** PNG bytes of the QR code of `text`: black modules on white, SCALE pixels a module. */
export function qrPng(text: string): Buffer {
  const modules = qrMatrix(text);
  const width = modules.length; // in modules, the margins included
  const pixels = width * SCALE;
  const rowBytes = Math.ceil(pixels / 8);
  const stride = rowBytes + 1;
  // Each module row is SCALE identical pixel rows, and the margins are white: a row that repeats the
  // one above is written with PNG's Up filter (its type byte 2, then zeros), which deflate takes in
  // a third less time than the repeated bytes and packs a little smaller.
  const raw = Buffer.allocUnsafe(stride * pixels).fill(0);
  for (let y = 1; y < pixels; y++) raw[y * stride] = FILTER_UP;
  const row = Buffer.allocUnsafe(stride).fill(0xff);
  row[0] = FILTER_NONE;
  row.copy(raw, 0); // the top margin's first row; the rest of the margin repeats it
  for (let my = MARGIN; my < width - MARGIN; my++) {
    // One pixel row per module row (unused bits at the end stay 1, white); the next SCALE - 1 repeat it.
    row.fill(0xff, 1);
    for (let mx = MARGIN; mx < width - MARGIN; mx++) {
      if (!modules[my]![mx]) continue;
      for (let x = mx * SCALE, end = x + SCALE; x < end; x++) row[1 + (x >> 3)] &= ~(0x80 >> (x & 7));
    }
    row.copy(raw, my * SCALE * stride);
  }
  row.fill(0xff, 1);
  row.copy(raw, (width - MARGIN) * SCALE * stride); // the bottom margin
  const header = Buffer.allocUnsafe(13).fill(0);
  header.writeUInt32BE(pixels, 0);
  header.writeUInt32BE(pixels, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // greyscale
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw, DEFLATE_OPTIONS)), IEND]);
}

export async function qrDataUri(text: string): Promise<string> {
  return `data:image/png;base64,${qrPng(text).toString('base64')}`;
}
