import { SqlError } from '../SqlError.js';

/** What a token is: a word (keyword or bare identifier), a quoted identifier, a string, a number, a symbol, or the end. */
export enum TokenKind {
  Word = 'word',
  QuotedIdent = 'quoted',
  String = 'string',
  Number = 'number',
  Symbol = 'symbol',
  End = 'end',
}

export interface Token {
  kind: TokenKind;
  /** The word as written, the identifier or string unquoted, the number's digits, or the symbol. */
  text: string;
  /** Offset of its first character in the text. */
  offset: number;
}

const SYMBOLS = ['<>', '<=', '>=', '!=', '||', '(', ')', ',', ';', '.', '*', '+', '-', '/', '%', '=', '<', '>', '[', ']'];

/**
 * Flink SQL's tokens: `--` and `/* *\/` comments skipped, 'strings' with '' escapes,
 * `back-quoted` identifiers, numbers with a fraction or exponent.
 */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new SqlError('SPW_ERR_SQL_SYNTAX', 'a comment is not closed', undefined, undefined);
      i = end + 2;
    } else if (c === "'") {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= n) throw syntax(text, start, 'a string is not closed');
        if (text[i] === "'") {
          if (text[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += text[i++];
      }
      tokens.push({ kind: TokenKind.String, text: value, offset: start });
    } else if (c === '`' || c === '"') {
      const start = i;
      const end = text.indexOf(c, i + 1);
      if (end < 0) throw syntax(text, start, 'a quoted identifier is not closed');
      tokens.push({ kind: TokenKind.QuotedIdent, text: text.slice(i + 1, end), offset: start });
      i = end + 1;
    } else if (isDigit(c) || (c === '.' && isDigit(text[i + 1] ?? ''))) {
      const start = i;
      while (i < n && isDigit(text[i]!)) i++;
      if (text[i] === '.' && isDigit(text[i + 1] ?? '')) for (i++; i < n && isDigit(text[i]!); ) i++;
      else if (text[i] === '.' && !isWordStart(text[i + 1] ?? '')) i++;
      if ((text[i] === 'e' || text[i] === 'E') && /[0-9+-]/.test(text[i + 1] ?? '')) for (i += 2; i < n && isDigit(text[i]!); ) i++;
      tokens.push({ kind: TokenKind.Number, text: text.slice(start, i), offset: start });
    } else if (isWordStart(c)) {
      const start = i;
      while (i < n && isWordPart(text[i]!)) i++;
      tokens.push({ kind: TokenKind.Word, text: text.slice(start, i), offset: start });
    } else {
      const symbol = SYMBOLS.find((s) => text.startsWith(s, i));
      if (symbol === undefined) throw syntax(text, i, `unexpected character ${JSON.stringify(c)}`);
      tokens.push({ kind: TokenKind.Symbol, text: symbol, offset: i });
      i += symbol.length;
    }
  }
  tokens.push({ kind: TokenKind.End, text: '', offset: n });
  return tokens;
}

function syntax(text: string, offset: number, message: string): SqlError {
  return SqlError.at('SPW_ERR_SQL_SYNTAX', message, text, offset);
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isWordStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === '$' || c > '\u007f';
}

function isWordPart(c: string): boolean {
  return isWordStart(c) || isDigit(c);
}
