import type { FastifyInstance } from 'fastify';
import { Catalog } from '../../sql/Catalog.js';
import { SqlError } from '../../sql/SqlError.js';
import { type SqlResult, SqlSession } from '../../sql/SqlSession.js';
import { REST_ROUTES as REST, type SqlAnswer } from '../../rest/RestApi.js';
import { serve } from '../../rpc/RouteServer.js';
import type { JobManagerContext } from './JobManagerContext.js';

/**
 * POST /sql {"statements": "..."}: runs Flink SQL statements in order against the catalogue
 * in the store. Every statement is first planned on a copy of the catalogue: a SQL error in
 * any of them answers 400 with its code, line and column, and nothing is changed or submitted.
 */
export async function sqlRoutes(http: FastifyInstance, context: JobManagerContext): Promise<void> {
  serve(http, REST.sql, async ({ body }, reply) => {
    const { statements, baseDir, settings } = body;
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
    return { results: answers };
  });
}

async function answer(result: SqlResult, context: JobManagerContext): Promise<SqlAnswer> {
  if (result.kind !== 'job') return result;
  const submission = { ...result.submission, params: { ...result.submission.params, plan: result.plan } };
  const job = context.scheduler().submit(await context.submitter().submission(submission as never));
  return { statement: result.statement, kind: 'job', id: job.id, columns: result.columns, updating: result.updating, bounded: result.bounded, plan: result.plan };
}
