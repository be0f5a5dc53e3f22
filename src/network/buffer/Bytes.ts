/** Up to this many bytes, a JS loop copies faster than Buffer.copy, which costs a native call (60-80 ns). */
const SMALL_COPY = 32;

/** Copies length bytes from source[from] to target[to]. */
export function copyBytes(source: Buffer, from: number, target: Buffer, to: number, length: number): void {
  if (length > SMALL_COPY) source.copy(target, to, from, from + length);
  else for (let i = 0; i < length; i++) target[to + i] = source[from + i];
}
