/**
 * Token bucket rate limiter, one bucket per API key.
 * The bucket holds the plan's per-minute limit and refills continuously.
 */
export interface Plan {
  name: "basic" | "professional" | "enterprise";
  perMinute: number;
}

export const PLANS: Record<Plan["name"], Plan> = {
  basic: { name: "basic", perMinute: 600 },
  professional: { name: "professional", perMinute: 3000 },
  enterprise: { name: "enterprise", perMinute: 20000 },
};

/** HyDE searches cost three requests, because they call an LLM. */
export const HYDE_COST = 3;

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(private readonly plan: Plan, private readonly now: () => number = Date.now) {
    this.tokens = plan.perMinute;
    this.last = now();
  }

  /** Takes `cost` tokens; returns the seconds to wait (Retry-After) when there are not enough. */
  take(cost = 1): number {
    this.refill();
    if (this.tokens >= cost) {
      this.tokens -= cost;
      return 0;
    }
    const missing = cost - this.tokens;
    return Math.ceil((missing / this.plan.perMinute) * 60);
  }

  private refill(): void {
    const t = this.now();
    const perMs = this.plan.perMinute / 60000;
    this.tokens = Math.min(this.plan.perMinute * 2, this.tokens + (t - this.last) * perMs);
    this.last = t;
  }
}
