export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export class RequestBudget {
  private readonly ceiling: number;
  private used = 0;

  constructor(ceiling: number) {
    if (!Number.isFinite(ceiling) || ceiling <= 0) {
      throw new RangeError(`ceiling must be positive, got ${ceiling}`);
    }
    this.ceiling = ceiling;
  }

  tryReserve(tokens: number): boolean {
    if (this.used + tokens > this.ceiling) {
      return false;
    }
    this.used += tokens;
    return true;
  }

  get remaining(): number {
    return Math.max(0, this.ceiling - this.used);
  }
}

export async function sendAll(calls: ToolCall[], budget: RequestBudget): Promise<string[]> {
  const results: string[] = [];
  for (const call of calls) {
    const cost = JSON.stringify(call.arguments).length / 3;
    if (!budget.tryReserve(Math.ceil(cost))) {
      results.push(`skipped ${call.name}: over budget (${budget.remaining} left)`);
      continue;
    }
    const response = await fetch(`/api/tools/${encodeURIComponent(call.name)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(call.arguments),
    });
    results.push(response.ok ? await response.text() : `error ${response.status}`);
  }
  return results;
}
