import { type ErrorCode, SpillwayError } from '../errors/Errors.js';

/** Where a token starts in the statements' text: offset, and 1-based line and column. */
export interface SourcePosition {
  offset: number;
  line: number;
  column: number;
}

/**
 * A SQL error (syntax, unknown name, type, unsupported construct): coded, with the line and
 * column of the place, and the line itself with a caret under it in the message, as a user
 * reading a terminal wants it. Nothing is submitted once one is raised.
 */
export class SqlError extends SpillwayError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly position: SourcePosition | undefined,
    text: string | undefined,
  ) {
    super(code, position === undefined ? message : `${message} (line ${position.line}, column ${position.column})${caret(text, position)}`);
  }

  /** The error at `offset` of `text`. */
  static at(code: ErrorCode, message: string, text: string, offset: number): SqlError {
    return new SqlError(code, message, positionOf(text, offset), text);
  }

  get line(): number | undefined {
    return this.position?.line;
  }

  get column(): number | undefined {
    return this.position?.column;
  }
}

/** The line of `text` at `position`, with a caret under its column. */
function caret(text: string | undefined, position: SourcePosition): string {
  if (text === undefined) return '';
  const line = text.split('\n')[position.line - 1] ?? '';
  return `\n${line}\n${' '.repeat(Math.max(0, position.column - 1))}^`;
}

/** The position of `offset` in `text`. */
export function positionOf(text: string, offset: number): SourcePosition {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { offset, line, column: offset - start + 1 };
}
