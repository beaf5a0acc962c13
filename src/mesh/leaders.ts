/**
 * Each location's leader, as the elections (src/election/) decided them: an input of the mesh, like
 * the nodes. Declared here so that the mesh does not import the election, which imports the mesh.
 */
/** Why a location's leader leads: it holds the Lease, Kilo's annotation rule chose it, or the Lease could not decide. */
export type LeaderReason = 'lease' | 'annotation' | 'fallback';

export interface ElectedLeader {
  node: string;
  reason: LeaderReason;
}

/** Location → its leader, as the elections decided them; the mesh takes this as input. */
export type ElectedLeaders = ReadonlyMap<string, ElectedLeader>;
