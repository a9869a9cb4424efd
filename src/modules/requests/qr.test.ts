import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { qrDataUri, qrMatrix, qrPng } from './qr.ts';

// jsqr is CommonJS with a default export; under Node's ESM loader the function is the module itself.
const jsQR = ((jsQRModule as any).default ?? jsQRModule) as typeof jsQRModule.default;

function decode(png: Buffer): string | null {
  const image = PNG.sync.read(png);
  return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data ?? null;
}

test('the QR code decodes back to the URL it encodes', async () => {
  const url = 'http://127.0.0.1:3000/pay/request_01KAB3C4D5E6F7G8H9J0K1M2N3';
  const uri = await qrDataUri(url);
  assert.match(uri, /^data:image\/png;base64,/);
  assert.equal(decode(Buffer.from(uri.slice('data:image/png;base64,'.length), 'base64')), url);
});

test('any payment URL round-trips through the QR code', () => {
  fc.assert(
    fc.property(
      fc.webUrl({ withQueryParameters: false, withFragments: false }).filter((u) => u.length < 200),
      (url) => {
        assert.equal(decode(qrPng(url)), url);
      },
    ),
    { numRuns: 40 },
  );
});

/** The same code drawn by the `qrcode` library, an encoder written apart from the one qr.ts uses. */
function otherEncoderMatrix(text: string): boolean[][] {
  const { modules } = QRCode.create([{ data: Buffer.from(text), mode: 'byte' }], {
    errorCorrectionLevel: 'M',
    maskPattern: 2,
  } as QRCode.QRCodeOptions);
  return Array.from({ length: modules.size }, (_, y) =>
    Array.from({ length: modules.size }, (_, x) => Boolean(modules.get(y, x))),
  );
}

test('the matrix is the one another encoder draws for the same text, error correction and mask', () => {
  fc.assert(
    fc.property(
      fc
        .oneof(
          fc.webUrl(),
          fc.string({ unit: 'grapheme', maxLength: 120 }),
          fc.string({ unit: 'binary', maxLength: 120 }),
        )
        .filter((text) => text.length > 0),
      (text) => {
        const withMargin = qrMatrix(text);
        const margin = withMargin
          .slice(0, 2)
          .concat(withMargin.slice(-2))
          .flat()
          .concat(withMargin.flatMap((row) => [...row.slice(0, 2), ...row.slice(-2)]));
        assert.ok(
          margin.every((module) => !module),
          'a white margin of 2 modules',
        );
        assert.deepEqual(
          withMargin.slice(2, -2).map((row) => row.slice(2, -2)),
          otherEncoderMatrix(text),
        );
      },
    ),
    { numRuns: 200 },
  );
});

test('every pixel is the module it draws: 4 pixels a module, a white margin of 2 modules', () => {
  const url = 'http://127.0.0.1:3000/pay/request_01KAB3C4D5E6F7G8H9J0K1M2N3';
  const image = PNG.sync.read(qrPng(url));
  const matrix = otherEncoderMatrix(url);
  const modules = { size: matrix.length, get: (y: number, x: number) => matrix[y]![x] };
  assert.equal(image.width, (modules.size + 4) * 4);
  assert.equal(image.height, image.width);
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      const [mx, my] = [Math.floor(x / 4) - 2, Math.floor(y / 4) - 2];
      const inside = mx >= 0 && my >= 0 && mx < modules.size && my < modules.size;
      const black = inside && modules.get(my, mx);
      assert.equal(image.data[(y * image.width + x) * 4], black ? 0 : 255, `pixel ${x},${y}`);
    }
  }
});
