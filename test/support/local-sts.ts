import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local AWS STS for the web identity flow (EKS IRSA): AssumeRoleWithWebIdentity over the
// AWS Query protocol, as the AWS SDK's STS client speaks it (a form-encoded POST, an XML
// answer). It checks the role and the web identity token it is given against the ones it
// expects, and hands out temporary keys that a mock Bedrock with the same keys accepts.

export interface LocalSts {
  readonly url: string;
  /** The keys handed out, newest last (each exchange makes new ones). */
  readonly issued: ReadonlyArray<{ accessKeyId: string; secretAccessKey: string; sessionToken: string }>;
  /** The form fields of each exchange, as received. */
  readonly requests: ReadonlyArray<Record<string, string>>;
  /** While set, exchanges answer this status with an STS error. */
  failWith(status: number | null): void;
  close(): Promise<void>;
}

export interface LocalStsOptions {
  readonly roleArn: string;
  /** The token the pod's file holds; any other is refused with InvalidIdentityToken. */
  readonly webIdentityToken: string;
  /** The keys' lifetime, DurationSeconds unless the request names one. */
  readonly durationS?: number;
  /** Every exchange hands out these keys instead of new ones (so a mock that accepts one key pair accepts them). */
  readonly keys?: { accessKeyId: string; secretAccessKey: string };
}

function stsError(code: string, message: string): string {
  return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomBytes(8).toString('hex')}</RequestId></ErrorResponse>`;
}

export async function startLocalSts(opts: LocalStsOptions): Promise<LocalSts> {
  const issued: Array<{ accessKeyId: string; secretAccessKey: string; sessionToken: string }> = [];
  const requests: Array<Record<string, string>> = [];
  let failure: number | null = null;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      requests.push(form);
      const reply = (status: number, xml: string): void => {
        res.writeHead(status, { 'content-type': 'text/xml' });
        res.end(xml);
      };
      if (failure !== null) return reply(failure, stsError('ServiceUnavailable', 'the local STS was told to fail'));
      if (req.method !== 'POST' || form.Action !== 'AssumeRoleWithWebIdentity')
        return reply(400, stsError('InvalidAction', 'only AssumeRoleWithWebIdentity is served'));
      if (form.RoleArn !== opts.roleArn)
        return reply(403, stsError('AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity'));
      if (form.WebIdentityToken !== opts.webIdentityToken)
        return reply(400, stsError('InvalidIdentityToken', 'Couldn&apos;t retrieve verification key from your identity provider'));
      const durationS = Number(form.DurationSeconds ?? opts.durationS ?? 3600);
      const keys = {
        accessKeyId: opts.keys?.accessKeyId ?? `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
        secretAccessKey: opts.keys?.secretAccessKey ?? randomBytes(20).toString('base64'),
        sessionToken: randomBytes(32).toString('base64'),
      };
      issued.push(keys);
      const expiration = new Date(Date.now() + durationS * 1000).toISOString();
      reply(
        200,
        `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
          `<Credentials><AccessKeyId>${keys.accessKeyId}</AccessKeyId><SecretAccessKey>${keys.secretAccessKey}</SecretAccessKey>` +
          `<SessionToken>${keys.sessionToken}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
          `<AssumedRoleUser><AssumedRoleId>AROA0000:${form.RoleSessionName}</AssumedRoleId><Arn>${opts.roleArn}/${form.RoleSessionName}</Arn></AssumedRoleUser>` +
          `<SubjectFromWebIdentityToken>system:serviceaccount:ai:switchyard</SubjectFromWebIdentityToken>` +
          `</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomBytes(8).toString('hex')}</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    issued,
    requests,
    failWith: (status) => {
      failure = status;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
