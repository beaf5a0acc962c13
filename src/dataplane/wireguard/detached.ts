/** What ensure() says, fake or real, when the interface is missing and the device is detached. */
export function detachedError(name: string): Error {
  return new Error(`WireGuard interface ${name} does not exist and is not created: its owner is stopping (detached)`);
}
