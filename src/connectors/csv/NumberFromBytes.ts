import { NumberStatus } from './CsvColumns.js';

const ZERO = 0x30;
const NINE = 0x39;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
/** Digits that make an integer below 2^53, and powers of ten a double holds exactly. */
const MAX_DIGITS = 15;
const EXACT_POWERS = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** The number a field's text is, as `Number(text)` reads it; `status` says whether it was one. */
export interface ParsedNumber {
  value: number;
  status: NumberStatus;
}

/**
 * Parses data[start, end) as `Number()` would its text, without making a string for the
 * usual field: an optional sign, up to 15 digits and one point. Those are exact: the
 * digits are an integer a double holds, divided by a power of ten it also holds, and
 * IEEE division rounds correctly, so the result is the double nearest the decimal, as
 * `Number()` gives. Anything else (exponents, more digits, spaces, `Infinity`, `0x1f`)
 * goes through `Number()` on the decoded text. An empty field is Null.
 */
export function numberFromBytes(data: Buffer, start: number, end: number, ascii: boolean, out: ParsedNumber): void {
  if (start === end) {
    out.status = NumberStatus.Null;
    return;
  }
  let i = start;
  let negative = false;
  const first = data[i];
  if (first === MINUS || first === PLUS) {
    negative = first === MINUS;
    i++;
  }
  let mantissa = 0;
  let digits = 0;
  let fraction = -1;
  for (; i < end; i++) {
    const c = data[i];
    if (c >= ZERO && c <= NINE) {
      mantissa = mantissa * 10 + (c - ZERO);
      digits++;
    } else if (c === DOT && fraction < 0) fraction = digits;
    else break;
  }
  if (i === end && digits > 0 && digits <= MAX_DIGITS) {
    const value = fraction < 0 || fraction === digits ? mantissa : mantissa / EXACT_POWERS[digits - fraction];
    out.value = negative ? -value : value;
    out.status = NumberStatus.Number;
    return;
  }
  numberFromText(data.toString(ascii ? 'latin1' : 'utf8', start, end), out);
}

/** `Number(text)`, where NaN is a number only when the text says NaN; an empty field is Null. */
export function numberFromText(text: string, out: ParsedNumber): void {
  if (text === '') {
    out.status = NumberStatus.Null;
    return;
  }
  const value = Number(text);
  out.value = value;
  out.status = Number.isNaN(value) && text.trim() !== 'NaN' ? NumberStatus.NotANumber : NumberStatus.Number;
}
