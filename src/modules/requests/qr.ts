import QRCode from 'qrcode';

// A fixed mask pattern skips the library's search over all eight masks (a valid QR code either
// way, and about twice as fast); scale 4 with a 2-module margin gives a ~150px image.
const options = { errorCorrectionLevel: 'M', maskPattern: 2, margin: 2, scale: 4 } as const;

export async function qrDataUri(text: string): Promise<string> {
  return QRCode.toDataURL(text, options as QRCode.QRCodeToDataURLOptions);
}

export async function qrSvg(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
}
