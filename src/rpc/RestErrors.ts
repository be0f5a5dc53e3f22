import type { FastifyError, FastifyInstance } from 'fastify';
import { ERRORS, errorBody, isErrorCode, type ErrorCode } from '../errors/Errors.js';

/**
 * Every error answer of a REST server is `{"code", "error"}` with a code from the
 * catalogue: a SpillwayError's own, at its status; a body or parameter fastify's
 * validation refused, SPW_ERR_BAD_REQUEST; an unknown route, SPW_ERR_NOT_FOUND.
 * `codeOfStatus` names the code of a fastify error that carries none of ours
 * (a body too large, say); without it such an error is SPW_ERR_BAD_REQUEST for a
 * 4xx, SPW_ERR_INTERNAL for a 5xx.
 */
export function replyWithCodes(http: FastifyInstance, codeOfStatus: (status: number, error: FastifyError, url: string) => { code: ErrorCode; message?: string } | undefined = () => undefined): void {
  http.setErrorHandler((error: FastifyError, request, reply) => {
    // A coded error answers with its code's status, unless it names another (a refused submission is a 400 whatever its cause).
    if (isErrorCode(error.code)) return reply.code(error.statusCode ?? ERRORS[error.code].status).send(errorBody({ code: error.code, message: error.message }));
    const status = error.statusCode ?? 500;
    const named = codeOfStatus(status, error, request.url);
    const code: ErrorCode = named?.code ?? (error.validation || (status >= 400 && status < 500) ? 'SPW_ERR_BAD_REQUEST' : 'SPW_ERR_INTERNAL');
    return reply.code(status).send(errorBody({ code, message: named?.message ?? error.message }));
  });
  http.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody({ code: 'SPW_ERR_NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` })),
  );
}
