import { LeaseBoard } from '../../src/election/memory-leases.js';
import { leaseApiContract } from './lease-api-contract.js';

leaseApiContract('in memory (LeaseBoard)', () => {
  const board = new LeaseBoard();
  return Promise.resolve({ client: () => board.client(), close: () => Promise.resolve() });
});
