import type { FastifyInstance } from 'fastify';
import { Catalog } from '../../sql/Catalog.js';
import { SqlError } from '../../sql/SqlError.js';
import { type SqlResult, SqlSession } from '../../sql/SqlSession.js';
import type { JobManagerContext } from './JobManagerContext.js';

interface SqlBody {
  statements: string;
  /** Where a CREATE FUNCTION's relative module path is read from (the client's working folder); the JobManager's own otherwise. */
  baseDir?: string;
  /** Settings as SET gives them, before the statements' own. */
  settings?: Record<string, string>;
}

const sqlSchema = {
  type: 'object',
  required: ['statements'],
  properties: {
    statements: { type: 'string', minLength: 1 },
    baseDir: { type: 'string', minLength: 1 },
    settings: { type: 'object', additionalProperties: { type: 'string' } },
  },
  additionalProperties: false,
} as const;

/** One statement's answer: a message, a table, or the id of the job it submitted. */
type SqlAnswer = { statement: string; kind: 'ok'; message: string } | { statement: string; kind: 'table'; columns: string[]; rows: unknown[][] } | { statement: string; kind: 'job'; id: string; columns: string[]; updating: boolean; bounded: boolean; plan: string[] };

/**
 * POST /sql {"statements": "..."}: runs Flink SQL statements in order against the catalogue
 * in the store. Every statement is first planned on a copy of the catalogue: a SQL error in
 * any of them answers 400 with its code, line and column, and nothing is changed or submitted.
 */
export async function sqlRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  http.post<{ Body: SqlBody }>('/sql', { schema: { body: sqlSchema } }, async (request, reply) => {
    const { statements, baseDir, settings } = request.body;
    const stored = context.sqlCatalog().load();
    try {
      new SqlSession(new Catalog(stored), settings, baseDir).execute(statements);
    } catch (error) {
      if (!(error instanceof SqlError)) throw error;
      return reply.code(400).send({ code: error.code, error: error.message, line: error.line, column: error.column });
    }
    const catalog = new Catalog(stored);
    const results = new SqlSession(catalog, settings, baseDir).execute(statements);
    await context.sqlCatalog().save(catalog.snapshot());
    const answers: SqlAnswer[] = [];
    for (const result of results) answers.push(await answer(result, context));
    await context.history().committed();
    return reply.code(200).send({ results: answers });
  });
}

async function answer(result: SqlResult, context: JobManagerContext): Promise<SqlAnswer> {
  if (result.kind !== 'job') return result;
  const submission = { ...result.submission, params: { ...result.submission.params, plan: result.plan } };
  const job = context.scheduler().submit(await context.submitter().submission(submission as never));
  return { statement: result.statement, kind: 'job', id: job.id, columns: result.columns, updating: result.updating, bounded: result.bounded, plan: result.plan };
}
