import { Pool } from "pg";
import type { Request } from "express";

export type TenantId = string;

/** How a tenant's data is isolated: one schema per tenant, or shared tables with row-level security. */
export enum IsolationMode {
  Schema = "schema",
  Rls = "rls",
}

export interface TenantConfig {
  id: TenantId;
  mode: IsolationMode;
  region: "eu1" | "eu2";
}

/**
 * Resolves the tenant from the request's subdomain: `acme.faro.nubeluz.dev` gives `acme`.
 * Throws when the host has no subdomain, so a request can never run without a tenant.
 */
export function tenantFromHost(host: string): TenantId {
  const sub = host.split(".")[0];
  if (!sub || sub === "faro") {
    throw new Error(`no tenant in host ${host}`);
  }
  return sub;
}

/** Checks out a connection with `app.tenant_id` set, and resets it when the connection is released. */
export class TenantPool {
  constructor(private readonly pool: Pool) {}

  async withTenant<T>(tenant: TenantId, fn: (client: any) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("select set_config('app.tenant_id', $1, false)", [tenant]);
      return await fn(client);
    } finally {
      await client.query("reset app.tenant_id");
      client.release();
    }
  }
}

export const cacheKey = (tenant: TenantId, key: string): string => `t:${tenant}:${key}`;

export function tenantMiddleware(req: Request & { tenant?: TenantId }, _res: unknown, next: () => void) {
  req.tenant = tenantFromHost(req.hostname);
  next();
}
