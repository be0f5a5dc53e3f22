/**
 * A recursive-descent parser of Flink SQL's statements (docs/sql.md says why not a library):
 * DDL with Flink's extensions (computed columns, WATERMARK, PRIMARY KEY NOT ENFORCED,
 * PARTITIONED BY, WITH options, ROW/ARRAY/MAP types), queries with window TVFs, FILTER,
 * OVER, FOR SYSTEM_TIME AS OF, and the client's statements (SET, SHOW, DESCRIBE, EXPLAIN,
 * EXECUTE STATEMENT SET). Errors are SPW_ERR_SQL_SYNTAX with the line, column and a caret.
 */
import { SqlError } from '../SqlError.js';
import type { ColumnDefinition, Expr, FromItem, InsertStatement, OrderItem, Over, Query, SelectItem, SqlType, Statement, WindowFunction } from './Ast.js';
import { type Token, TokenKind, tokenize } from './Lexer.js';

/** A statement with the text it was parsed from (for job details and views). */
export interface ParsedStatement {
  statement: Statement;
  text: string;
}

/** Functions SQL calls without parentheses. */
const NILADIC = new Set(['CURRENT_TIMESTAMP', 'LOCALTIMESTAMP', 'CURRENT_DATE']);

/** Words that end an expression or a FROM item, so never an implicit alias. */
const RESERVED = new Set(
  'SELECT FROM WHERE GROUP HAVING ORDER LIMIT UNION JOIN INNER LEFT RIGHT FULL OUTER CROSS ON AS AND OR NOT IS NULL IN LIKE BETWEEN CASE WHEN THEN ELSE END FOR WITH BY ASC DESC FILTER OVER PARTITION SET INSERT INTO VALUES TABLE'.split(' '),
);

const INTERVAL_UNITS: Record<string, number> = { MILLISECOND: 1, SECOND: 1000, MINUTE: 60_000, HOUR: 3_600_000, DAY: 86_400_000 };
const WINDOW_FUNCTIONS = new Set(['TUMBLE', 'HOP', 'CUMULATE', 'SESSION']);

/** Parses every statement of `text`, in order. */
export function parseStatements(text: string): ParsedStatement[] {
  return new Parser(text).statements();
}

class Parser {
  private readonly tokens: Token[];
  private i = 0;

  constructor(private readonly text: string) {
    this.tokens = tokenize(text);
  }

  statements(): ParsedStatement[] {
    const out: ParsedStatement[] = [];
    for (;;) {
      while (this.eatSymbol(';'));
      if (this.peek().kind === TokenKind.End) return out;
      const start = this.peek().offset;
      const statement = this.statement();
      const end = this.peek().offset;
      if (!this.eatSymbol(';') && this.peek().kind !== TokenKind.End) throw this.error(`expected ";" or the end, found ${this.describe(this.peek())}`);
      out.push({ statement, text: this.text.slice(start, end).trim() });
    }
  }

  private statement(): Statement {
    const at = this.peek().offset;
    if (this.isWord('CREATE')) return this.create();
    if (this.eatWord('SET')) {
      const key = this.stringOrWord();
      this.expectSymbol('=');
      return { k: 'set', at, key, value: this.stringOrWord() };
    }
    if (this.isWord('INSERT')) return this.insert();
    if (this.eatWord('EXECUTE')) {
      this.expectWord('STATEMENT');
      this.expectWord('SET');
      this.expectWord('BEGIN');
      const inserts: InsertStatement[] = [];
      while (!this.eatWord('END')) {
        inserts.push(this.insert());
        this.expectSymbol(';');
      }
      return { k: 'statementSet', at, inserts };
    }
    if (this.eatWord('EXPLAIN')) {
      if (this.eatWord('PLAN')) this.expectWord('FOR');
      return { k: 'explain', at, statement: this.statement() };
    }
    if (this.eatWord('SHOW')) {
      this.expectWord('TABLES');
      return { k: 'showTables', at };
    }
    if (this.eatWord('DESCRIBE') || this.eatWord('DESC')) return { k: 'describe', at, name: this.identifier() };
    if (this.eatWord('DROP')) {
      this.eatWord('TEMPORARY');
      const what = this.expectOneOf(['TABLE', 'VIEW', 'FUNCTION']) as 'TABLE' | 'VIEW' | 'FUNCTION';
      const ifExists = this.eatWord('IF') && (this.expectWord('EXISTS'), true);
      return { k: 'drop', at, what, name: this.identifier(), ifExists };
    }
    if (this.isWord('SELECT') || this.isSymbol('(')) return { k: 'query', at, query: this.query() };
    throw this.error(`expected a statement, found ${this.describe(this.peek())}`);
  }

  private create(): Statement {
    const at = this.peek().offset;
    this.expectWord('CREATE');
    this.eatWord('TEMPORARY');
    this.eatWord('TEMPORARY');
    if (this.eatWord('VIEW')) {
      const name = this.identifier();
      this.expectWord('AS');
      const start = this.peek().offset;
      const query = this.query();
      return { k: 'createView', at, name, query, text: this.text.slice(start, this.peek().offset).trim() };
    }
    if (this.eatWord('FUNCTION')) {
      const name = this.identifier();
      this.expectWord('AS');
      const module = this.string();
      let language = 'JAVASCRIPT';
      if (this.eatWord('LANGUAGE')) language = this.word().toUpperCase();
      return { k: 'createFunction', at, name, module, language };
    }
    this.expectWord('TABLE');
    const ifNotExists = this.eatWord('IF') && (this.expectWord('NOT'), this.expectWord('EXISTS'), true);
    const name = this.identifier();
    this.expectSymbol('(');
    const columns: ColumnDefinition[] = [];
    let watermark: { column: string; expr: Expr } | undefined;
    let primaryKey: string[] = [];
    do {
      if (this.eatWord('WATERMARK')) {
        this.expectWord('FOR');
        const column = this.identifier();
        this.expectWord('AS');
        watermark = { column, expr: this.expr() };
      } else if (this.isWord('PRIMARY') || this.isWord('CONSTRAINT')) {
        if (this.eatWord('CONSTRAINT')) this.identifier();
        this.expectWord('PRIMARY');
        this.expectWord('KEY');
        primaryKey = this.identifierList();
        this.expectWord('NOT');
        this.expectWord('ENFORCED');
      } else {
        const colAt = this.peek().offset;
        const column = this.identifier();
        if (this.eatWord('AS')) columns.push({ name: column, at: colAt, expr: this.expr() });
        else {
          columns.push({ name: column, at: colAt, type: this.type() });
          if (this.eatWord('PRIMARY')) {
            this.expectWord('KEY');
            this.expectWord('NOT');
            this.expectWord('ENFORCED');
            primaryKey = [column];
          }
          if (this.eatWord('NOT')) this.expectWord('NULL');
          if (this.eatWord('COMMENT')) this.string();
        }
      }
    } while (this.eatSymbol(','));
    this.expectSymbol(')');
    let partitionedBy: string[] = [];
    if (this.eatWord('PARTITIONED')) {
      this.expectWord('BY');
      partitionedBy = this.identifierList();
    }
    const options: Record<string, string> = {};
    if (this.eatWord('WITH')) {
      this.expectSymbol('(');
      do {
        const key = this.string();
        this.expectSymbol('=');
        options[key] = this.string();
      } while (this.eatSymbol(','));
      this.expectSymbol(')');
    }
    return { k: 'createTable', at, name, ifNotExists, columns, watermark, primaryKey, partitionedBy, options };
  }

  private insert(): InsertStatement {
    const at = this.peek().offset;
    this.expectWord('INSERT');
    if (!this.eatWord('INTO')) this.expectWord('OVERWRITE');
    const table = this.identifier();
    return { k: 'insert', at, table, query: this.query() };
  }

  private type(): SqlType {
    const name = this.word().toUpperCase();
    if (name === 'ROW') {
      const close = this.eatSymbol('<') ? '>' : (this.expectSymbol('('), ')');
      const fields: { name: string; type: SqlType }[] = [];
      do fields.push({ name: this.identifier(), type: this.type() });
      while (this.eatSymbol(','));
      this.expectSymbol(close);
      return { name, params: [], fields };
    }
    if (name === 'ARRAY') {
      this.expectSymbol('<');
      const element = this.type();
      this.expectSymbol('>');
      return { name, params: [], element };
    }
    if (name === 'MAP') {
      this.expectSymbol('<');
      const key = this.type();
      this.expectSymbol(',');
      const value = this.type();
      this.expectSymbol('>');
      return { name, params: [], key, value };
    }
    const params: number[] = [];
    if (this.eatSymbol('(')) {
      do params.push(Number(this.expectKind(TokenKind.Number).text));
      while (this.eatSymbol(','));
      this.expectSymbol(')');
    }
    if (name === 'TIMESTAMP' && this.eatWord('WITH')) {
      this.expectWord('LOCAL');
      this.expectWord('TIME');
      this.expectWord('ZONE');
      return { name: 'TIMESTAMP_LTZ', params };
    }
    if (name === 'DOUBLE') this.eatWord('PRECISION');
    return { name, params };
  }

  // Queries.

  private query(): Query {
    let query = this.queryTerm();
    while (this.isWord('UNION')) {
      const at = this.next().offset;
      const all = this.eatWord('ALL');
      if (!all) this.eatWord('DISTINCT');
      query = { k: 'union', at, all, left: query, right: this.queryTerm(), orderBy: [] };
    }
    const orderBy = this.eatWord('ORDER') ? (this.expectWord('BY'), this.orderList()) : [];
    const limit = this.eatWord('LIMIT') ? Number(this.expectKind(TokenKind.Number).text) : undefined;
    if (orderBy.length > 0 || limit !== undefined) {
      if (query.orderBy.length > 0 || query.limit !== undefined) throw this.error('ORDER BY or LIMIT given twice');
      query = { ...query, orderBy, limit };
    }
    return query;
  }

  private queryTerm(): Query {
    if (this.eatSymbol('(')) {
      const query = this.query();
      this.expectSymbol(')');
      return query;
    }
    const at = this.peek().offset;
    this.expectWord('SELECT');
    const distinct = this.eatWord('DISTINCT');
    if (!distinct) this.eatWord('ALL');
    const items: SelectItem[] = [];
    do items.push(this.selectItem());
    while (this.eatSymbol(','));
    const from = this.eatWord('FROM') ? this.fromList() : undefined;
    const where = this.eatWord('WHERE') ? this.expr() : undefined;
    const groupBy = this.eatWord('GROUP') ? (this.expectWord('BY'), this.exprList()) : [];
    const having = this.eatWord('HAVING') ? this.expr() : undefined;
    return { k: 'select', at, distinct, items, from, where, groupBy, having, orderBy: [] };
  }

  private selectItem(): SelectItem {
    const at = this.peek().offset;
    if (this.eatSymbol('*')) return { e: { k: 'star', at } };
    const t = this.peek();
    if ((t.kind === TokenKind.Word || t.kind === TokenKind.QuotedIdent) && this.peek(1).text === '.' && this.peek(2).text === '*') {
      this.i += 3;
      return { e: { k: 'star', at, table: t.text } };
    }
    const e = this.expr();
    return { e, alias: this.alias() };
  }

  private alias(): string | undefined {
    if (this.eatWord('AS')) return this.identifier();
    const t = this.peek();
    if (t.kind === TokenKind.QuotedIdent || (t.kind === TokenKind.Word && !RESERVED.has(t.text.toUpperCase()))) return this.identifier();
    return undefined;
  }

  private fromList(): FromItem {
    let item = this.joined();
    while (this.isSymbol(',')) {
      const at = this.next().offset;
      item = { k: 'join', at, type: 'cross', left: item, right: this.joined() };
    }
    return item;
  }

  private joined(): FromItem {
    let item = this.fromItem();
    for (;;) {
      const at = this.peek().offset;
      let type: 'inner' | 'left' | 'right' | 'full' | 'cross';
      if (this.eatWord('JOIN')) type = 'inner';
      else if (this.eatWord('INNER')) type = (this.expectWord('JOIN'), 'inner');
      else if (this.eatWord('CROSS')) type = (this.expectWord('JOIN'), 'cross');
      else if (this.isWord('LEFT') || this.isWord('RIGHT') || this.isWord('FULL')) {
        type = this.next().text.toLowerCase() as 'left' | 'right' | 'full';
        this.eatWord('OUTER');
        this.expectWord('JOIN');
      } else return item;
      const right = this.fromItem();
      const on = type === 'cross' ? undefined : (this.expectWord('ON'), this.expr());
      item = { k: 'join', at, type, left: item, right, on };
    }
  }

  private fromItem(): FromItem {
    const at = this.peek().offset;
    if (this.eatSymbol('(')) {
      if (this.isWord('SELECT') || this.isSymbol('(')) {
        const query = this.query();
        this.expectSymbol(')');
        return { k: 'subquery', at, query, alias: this.alias() };
      }
      const inner = this.fromList();
      this.expectSymbol(')');
      return inner;
    }
    if (this.isWord('TABLE') && this.peek(1).text === '(') {
      this.i += 2;
      const tvf = this.windowTvf(at);
      this.expectSymbol(')');
      return { ...tvf, alias: this.alias() };
    }
    const name = this.identifier();
    let systemTime: Expr | undefined;
    if (this.isWord('FOR') && this.peek(1).text.toUpperCase() === 'SYSTEM_TIME') {
      this.i += 2;
      this.expectWord('AS');
      this.expectWord('OF');
      systemTime = this.expr();
    }
    return { k: 'table', at, name, alias: this.alias(), systemTime };
  }

  private windowTvf(at: number): Extract<FromItem, { k: 'tvf' }> {
    const fnToken = this.peek();
    const fn = this.word().toUpperCase();
    if (!WINDOW_FUNCTIONS.has(fn)) throw this.errorAt(fnToken.offset, `expected a window function (TUMBLE, HOP, CUMULATE, SESSION), found ${fn}`);
    this.expectSymbol('(');
    this.expectWord('TABLE');
    const tableAt = this.peek().offset;
    const table: FromItem = { k: 'table', at: tableAt, name: this.identifier() };
    const partitionBy: Expr[] = [];
    if (this.eatWord('PARTITION')) {
      this.expectWord('BY');
      // The keys end where the DESCRIPTOR argument starts.
      do partitionBy.push(this.expr());
      while (this.isSymbol(',') && this.peek(1).text.toUpperCase() !== 'DESCRIPTOR' && (this.i++, true));
    }
    this.expectSymbol(',');
    this.expectWord('DESCRIPTOR');
    this.expectSymbol('(');
    const timeColumn = this.identifier();
    this.expectSymbol(')');
    const intervals: number[] = [];
    while (this.eatSymbol(',')) {
      const e = this.expr();
      if (e.k !== 'interval') throw this.errorAt(e.at, `a window's size, slide or gap is an INTERVAL`);
      intervals.push(e.ms);
    }
    this.expectSymbol(')');
    return { k: 'tvf', at, fn: fn as WindowFunction, table, partitionBy, timeColumn, intervals };
  }

  private orderList(): OrderItem[] {
    const items: OrderItem[] = [];
    do {
      const e = this.expr();
      const desc = this.eatWord('DESC');
      if (!desc) this.eatWord('ASC');
      items.push({ e, desc });
    } while (this.eatSymbol(','));
    return items;
  }

  private exprList(): Expr[] {
    const list: Expr[] = [];
    do list.push(this.expr());
    while (this.eatSymbol(','));
    return list;
  }

  // Expressions, by precedence: OR, AND, NOT, comparison (IS, BETWEEN, IN, LIKE), ||, + -, * / %, unary.

  private expr(): Expr {
    return this.leftAssociative(() => this.andExpr(), () => this.wordAt('OR'));
  }

  private andExpr(): Expr {
    return this.leftAssociative(() => this.notExpr(), () => this.wordAt('AND'));
  }

  private notExpr(): Expr {
    if (this.isWord('NOT')) {
      const at = this.next().offset;
      return { k: 'un', at, op: 'NOT', e: this.notExpr() };
    }
    return this.comparison();
  }

  private comparison(): Expr {
    const l = this.concat();
    const at = this.peek().offset;
    const t = this.peek();
    if (t.kind === TokenKind.Symbol && ['=', '<>', '!=', '<', '<=', '>', '>='].includes(t.text)) {
      this.i++;
      return { k: 'bin', at, op: t.text === '!=' ? '<>' : t.text, l, r: this.concat() };
    }
    if (this.eatWord('IS')) {
      const not = this.eatWord('NOT');
      if (this.eatWord('NULL')) return { k: 'isnull', at, e: l, not };
      const value = this.expectOneOf(['TRUE', 'FALSE']) === 'TRUE';
      const test: Expr = { k: 'bin', at, op: '=', l, r: { k: 'lit', at, v: value } };
      return not ? { k: 'un', at, op: 'NOT', e: test } : test;
    }
    const not = this.isWord('NOT') && ['BETWEEN', 'IN', 'LIKE'].includes(this.peek(1).text.toUpperCase()) && (this.i++, true);
    if (this.eatWord('BETWEEN')) {
      this.eatWord('ASYMMETRIC');
      const lo = this.concat();
      this.expectWord('AND');
      return { k: 'between', at, e: l, lo, hi: this.concat(), not };
    }
    if (this.eatWord('IN')) {
      this.expectSymbol('(');
      const list = this.exprList();
      this.expectSymbol(')');
      return { k: 'in', at, e: l, list, not };
    }
    if (this.eatWord('LIKE')) return { k: 'like', at, e: l, pattern: this.concat(), not };
    return l;
  }

  private concat(): Expr {
    return this.leftAssociative(() => this.additive(), () => this.symbolAt(['||']));
  }

  private additive(): Expr {
    return this.leftAssociative(() => this.multiplicative(), () => this.symbolAt(['+', '-']));
  }

  private multiplicative(): Expr {
    return this.leftAssociative(() => this.unary(), () => this.symbolAt(['*', '/', '%']));
  }

  /** `operand (op operand)*` of one precedence, grouped from the left; `operator` names the next token's operator of this level, if it is one. */
  private leftAssociative(operand: () => Expr, operator: () => string | undefined): Expr {
    let l = operand();
    for (let op = operator(); op !== undefined; op = operator()) {
      const at = this.next().offset;
      l = { k: 'bin', at, op, l, r: operand() };
    }
    return l;
  }

  private unary(): Expr {
    if (this.isSymbol('-')) {
      const at = this.next().offset;
      const e = this.unary();
      if (e.k === 'lit' && typeof e.v === 'number') return { k: 'lit', at, v: -e.v };
      return { k: 'un', at, op: '-', e };
    }
    if (this.eatSymbol('+')) return this.unary();
    return this.primary();
  }

  private primary(): Expr {
    const t = this.peek();
    const at = t.offset;
    if (t.kind === TokenKind.Number) {
      this.i++;
      return { k: 'lit', at, v: Number(t.text) };
    }
    if (t.kind === TokenKind.String) {
      this.i++;
      return { k: 'lit', at, v: t.text };
    }
    if (this.eatSymbol('(')) {
      const e = this.expr();
      this.expectSymbol(')');
      return e;
    }
    if (t.kind === TokenKind.Word) {
      const word = t.text.toUpperCase();
      if (word === 'NULL') return (this.i++, { k: 'lit', at, v: null });
      if (word === 'TRUE' || word === 'FALSE') return (this.i++, { k: 'lit', at, v: word === 'TRUE' });
      if (word === 'INTERVAL') return this.interval();
      if (word === 'CASE') return this.caseExpr();
      if ((word === 'CAST' || word === 'TRY_CAST') && this.peek(1).text === '(') {
        this.i += 2;
        const e = this.expr();
        this.expectWord('AS');
        const type = this.type();
        this.expectSymbol(')');
        return { k: 'cast', at, e, type };
      }
      if (word === 'EXTRACT' && this.peek(1).text === '(') {
        this.i += 2;
        const unit = this.word().toUpperCase();
        this.expectWord('FROM');
        const e = this.expr();
        this.expectSymbol(')');
        return { k: 'extract', at, unit, e };
      }
      if ((word === 'TIMESTAMP' || word === 'DATE') && this.peek(1).kind === TokenKind.String) {
        this.i++;
        const text = this.next().text;
        return { k: 'call', at, name: word === 'DATE' ? 'DATE_LITERAL' : 'TIMESTAMP_LITERAL', args: [{ k: 'lit', at, v: text }], distinct: false, star: false };
      }
      if (NILADIC.has(word) && this.peek(1).text !== '(') return (this.i++, { k: 'call', at, name: word, args: [], distinct: false, star: false });
      if (RESERVED.has(word) && word !== 'LEFT' && word !== 'RIGHT') throw this.error(`expected an expression, found ${this.describe(t)}`);
    }
    if (t.kind === TokenKind.Word && this.peek(1).text === '(') return this.call();
    if (t.kind === TokenKind.Word || t.kind === TokenKind.QuotedIdent) {
      const parts = [this.identifier()];
      while (this.isSymbol('.') && (this.peek(1).kind === TokenKind.Word || this.peek(1).kind === TokenKind.QuotedIdent)) {
        this.i++;
        parts.push(this.identifier());
      }
      return { k: 'col', at, parts };
    }
    throw this.error(`expected an expression, found ${this.describe(t)}`);
  }

  private call(): Expr {
    const at = this.peek().offset;
    const name = this.next().text.toUpperCase();
    this.expectSymbol('(');
    let distinct = false;
    let star = false;
    const args: Expr[] = [];
    if (this.eatSymbol('*')) star = true;
    else if (!this.isSymbol(')')) {
      distinct = this.eatWord('DISTINCT');
      args.push(...this.exprList());
    }
    this.expectSymbol(')');
    let filter: Expr | undefined;
    if (this.isWord('FILTER') && this.peek(1).text === '(') {
      this.i += 2;
      this.expectWord('WHERE');
      filter = this.expr();
      this.expectSymbol(')');
    }
    let over: Over | undefined;
    if (this.eatWord('OVER')) {
      this.expectSymbol('(');
      const partitionBy = this.eatWord('PARTITION') ? (this.expectWord('BY'), this.exprList()) : [];
      const orderBy = this.eatWord('ORDER') ? (this.expectWord('BY'), this.orderList()) : [];
      this.expectSymbol(')');
      over = { partitionBy, orderBy };
    }
    return { k: 'call', at, name, args, distinct, star, filter, over };
  }

  private interval(): Expr {
    const at = this.next().offset;
    const amount = this.peek().kind === TokenKind.String ? Number(this.next().text) : Number(this.expectKind(TokenKind.Number).text);
    const unitToken = this.peek();
    const unit = this.word().toUpperCase().replace(/S$/, '');
    const ms = INTERVAL_UNITS[unit];
    if (ms === undefined || !Number.isFinite(amount)) throw this.errorAt(unitToken.offset, `expected an interval unit (SECOND, MINUTE, HOUR, DAY), found ${unit}`);
    return { k: 'interval', at, ms: amount * ms };
  }

  private caseExpr(): Expr {
    const at = this.next().offset;
    const operand = this.isWord('WHEN') ? undefined : this.expr();
    const whens: { when: Expr; then: Expr }[] = [];
    while (this.eatWord('WHEN')) {
      const when = this.expr();
      this.expectWord('THEN');
      whens.push({ when, then: this.expr() });
    }
    if (whens.length === 0) throw this.error('CASE needs a WHEN');
    const otherwise = this.eatWord('ELSE') ? this.expr() : undefined;
    this.expectWord('END');
    return { k: 'case', at, operand, whens, otherwise };
  }

  // Tokens.

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== TokenKind.End) this.i++;
    return t;
  }

  private isWord(word: string): boolean {
    const t = this.peek();
    return t.kind === TokenKind.Word && t.text.toUpperCase() === word;
  }

  /** `word` if the next token is it (in any case). */
  private wordAt(word: string): string | undefined {
    return this.isWord(word) ? word : undefined;
  }

  /** The next token's text if it is one of `symbols`. */
  private symbolAt(symbols: readonly string[]): string | undefined {
    const t = this.peek();
    return t.kind === TokenKind.Symbol && symbols.includes(t.text) ? t.text : undefined;
  }

  private isSymbol(symbol: string): boolean {
    const t = this.peek();
    return t.kind === TokenKind.Symbol && t.text === symbol;
  }

  private eatWord(word: string): boolean {
    if (!this.isWord(word)) return false;
    this.i++;
    return true;
  }

  private eatSymbol(symbol: string): boolean {
    if (!this.isSymbol(symbol)) return false;
    this.i++;
    return true;
  }

  private expectWord(word: string): void {
    if (!this.eatWord(word)) throw this.error(`expected ${word}, found ${this.describe(this.peek())}`);
  }

  private expectSymbol(symbol: string): void {
    if (!this.eatSymbol(symbol)) throw this.error(`expected "${symbol}", found ${this.describe(this.peek())}`);
  }

  private expectOneOf(words: string[]): string {
    const word = words.find((w) => this.isWord(w));
    if (word === undefined) throw this.error(`expected ${words.join(' or ')}, found ${this.describe(this.peek())}`);
    this.i++;
    return word;
  }

  private expectKind(kind: TokenKind): Token {
    const t = this.peek();
    if (t.kind !== kind) throw this.error(`expected a ${kind}, found ${this.describe(t)}`);
    return this.next();
  }

  private word(): string {
    return this.expectKind(TokenKind.Word).text;
  }

  private identifier(): string {
    const t = this.peek();
    if (t.kind !== TokenKind.Word && t.kind !== TokenKind.QuotedIdent) throw this.error(`expected a name, found ${this.describe(t)}`);
    this.i++;
    return t.text;
  }

  private identifierList(): string[] {
    this.expectSymbol('(');
    const names: string[] = [];
    do names.push(this.identifier());
    while (this.eatSymbol(','));
    this.expectSymbol(')');
    return names;
  }

  private string(): string {
    return this.expectKind(TokenKind.String).text;
  }

  private stringOrWord(): string {
    const t = this.peek();
    if (t.kind === TokenKind.String || t.kind === TokenKind.Word || t.kind === TokenKind.Number) return this.next().text;
    throw this.error(`expected a quoted string, found ${this.describe(t)}`);
  }

  private describe(t: Token): string {
    if (t.kind === TokenKind.End) return 'the end';
    if (t.kind === TokenKind.String) return `'${t.text}'`;
    return `"${t.text}"`;
  }

  private error(message: string): SqlError {
    return this.errorAt(this.peek().offset, message);
  }

  private errorAt(offset: number, message: string): SqlError {
    return SqlError.at('SPW_ERR_SQL_SYNTAX', message, this.text, offset);
  }
}
