// Types of sidecar-client.mjs for the DSH plugin's type check (not shipped:
// setup inlines the module itself into the plugin it writes).
export interface SidecarAnswer {
  doc?: any
  error?: { code: string; message: string }
}
export interface SidecarCall {
  key: string
  cwd: string
  request: Record<string, unknown>
  signal?: AbortSignal
  op?: string
}
export function sidecarReader(learnVersion: (key: string) => Promise<string | null> | string | null): (call: SidecarCall) => Promise<SidecarAnswer | null> | null
